// The Mini App page: Paint (a mask for /replace), Frame (paddings for /expand), Styles, My results.
// Every API call carries Telegram's initData; pictures come through the API as blobs, never by URL.
"use strict";

const tg = (window.Telegram && window.Telegram.WebApp) || null;
const query = new URLSearchParams(location.search);
const state = {
  texts: {}, photoRef: query.get("p") || "", followups: [],
  photo: null,          // {url, width, height} of the chosen photo, once loaded
  strokes: [],          // Paint: [{size, points: [[x, y], ...]}] in the photo's own pixels
  pads: {left: 0, top: 0, right: 0, bottom: 0},
  ratio: "free", count: 1, busy: false,
};
const $ = (id) => document.getElementById(id);
const MAX_PADDING = 2048;

// --- the API -------------------------------------------------------------------------------------------------

async function api(path, options = {}) {
  const headers = {Authorization: "tma " + (tg ? tg.initData : "")};
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch("api/" + path, {
      method: options.body !== undefined ? "POST" : "GET", headers,
      body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
    });
  } catch (error) {
    throw new Error(text("offline"));
  }
  if (!response.ok) {
    let message = text("failed");
    try { message = (await response.json()).message || message; } catch (error) { /* not JSON: keep the general one */ }
    throw new Error(message);
  }
  return options.blob ? response.blob() : response.json();
}

const blobs = new Map();  // ref -> Promise of an object URL
function pictureUrl(ref) {
  if (!blobs.has(ref)) {
    blobs.set(ref, api("photo?ref=" + encodeURIComponent(ref), {blob: true}).then((blob) => URL.createObjectURL(blob)));
  }
  return blobs.get(ref);
}

function text(name, count) {
  const value = state.texts[name] || "";
  return count === undefined ? value : value.replace("{count}", String(count));
}

function say(message, isError) {
  const box = $("message");
  box.textContent = message;
  box.hidden = !message;
  box.classList.toggle("error", Boolean(isError));
  if (message && tg && tg.HapticFeedback) tg.HapticFeedback.notificationOccurred(isError ? "error" : "success");
}

async function submit(path, body, button) {
  if (state.busy) return;
  state.busy = true;
  if (button) button.disabled = true;
  say("");
  try {
    const answer = await api(path, {body});
    say(answer.message, false);
    refreshCredits();
    return answer;
  } catch (error) {
    say(error.message, true);
  } finally {
    state.busy = false;
    if (button) button.disabled = false;
  }
}

async function refreshCredits() {
  try {
    const me = await api("me");
    $("credits").textContent = me.credits || "";
  } catch (error) { /* the header only loses its figure */ }
}

// --- theme, language, screens --------------------------------------------------------------------------------

function applyTheme() {
  const params = (tg && tg.themeParams) || {};
  for (const [key, value] of Object.entries(params)) {
    if (typeof value === "string") document.documentElement.style.setProperty("--tg-theme-" + key.replace(/_/g, "-"), value);
  }
}

function applyTexts(me) {
  state.texts = me.texts;
  state.followups = me.followups || [];
  document.documentElement.lang = me.language;
  document.documentElement.dir = me.rtl ? "rtl" : "ltr";
  for (const element of document.querySelectorAll("[data-text]")) element.textContent = text(element.dataset.text);
  for (const element of document.querySelectorAll("[data-placeholder]")) element.placeholder = text(element.dataset.placeholder);
  $("credits").textContent = me.credits || "";
  document.title = text(screenName());
}

function screenName() {
  const asked = query.get("s") || (tg && tg.initDataUnsafe && tg.initDataUnsafe.start_param) || "results";
  return ["paint", "frame", "styles", "results"].includes(asked) ? asked : "results";
}

const shown = {};
async function show(screen) {
  for (const section of document.querySelectorAll(".screen")) section.hidden = section.id !== screen;
  for (const tab of document.querySelectorAll(".tab")) {
    if (tab.dataset.screen === screen) tab.setAttribute("aria-current", "page"); else tab.removeAttribute("aria-current");
  }
  document.title = text(screen);
  const needsPhoto = screen === "paint" || screen === "frame";
  $("no-photo").hidden = !(needsPhoto && !state.photoRef);
  if (needsPhoto && !state.photoRef) { $(screen).hidden = true; return; }
  try {
    if (needsPhoto || (screen === "styles" && state.photoRef)) await loadPhoto();
    if (!shown[screen]) { shown[screen] = true; await SCREENS[screen].open(); }
    else if (SCREENS[screen].again) SCREENS[screen].again();
  } catch (error) {
    say(error.message, true);
  }
}

async function loadPhoto() {
  if (state.photo && state.photo.ref === state.photoRef) return;
  const url = await pictureUrl(state.photoRef);
  const image = new Image();
  image.src = url;
  await image.decode();
  state.photo = {ref: state.photoRef, url, width: image.naturalWidth, height: image.naturalHeight};
  state.strokes = [];
  state.pads = {left: 0, top: 0, right: 0, bottom: 0};
  for (const id of ["paint-photo", "frame-photo", "styles-photo"]) $(id).src = url;
  for (const name of ["paint", "frame"]) shown[name] = false;
}

function choosePhoto(ref, screen) {
  state.photoRef = ref;
  say("");
  show(screen);
}

// --- Paint ---------------------------------------------------------------------------------------------------

const paint = {zoom: 1, panX: 0, panY: 0, pointers: new Map(), pinch: null, stroke: null};

function paintOpen() {
  const canvas = $("paint-canvas");
  canvas.width = state.photo.width;
  canvas.height = state.photo.height;
  paint.zoom = 1; paint.panX = 0; paint.panY = 0;
  applyZoom();
  redraw();
}

function toPhoto(event) {
  const rect = $("paint-canvas").getBoundingClientRect();
  return [(event.clientX - rect.left) * state.photo.width / rect.width,
          (event.clientY - rect.top) * state.photo.height / rect.height];
}

function brushPixels() {
  // the brush slider is in screen pixels: the same stroke width whatever the zoom
  const rect = $("paint-canvas").getBoundingClientRect();
  return Number($("brush").value) * state.photo.width / rect.width;
}

function drawStrokes(context, colour) {
  context.lineCap = "round";
  context.lineJoin = "round";
  context.strokeStyle = colour;
  context.fillStyle = colour;
  for (const stroke of state.strokes) {
    context.lineWidth = stroke.size;
    const [first, ...rest] = stroke.points;
    context.beginPath();
    if (!rest.length) {
      context.arc(first[0], first[1], stroke.size / 2, 0, 2 * Math.PI);
      context.fill();
      continue;
    }
    context.moveTo(first[0], first[1]);
    for (const [x, y] of rest) context.lineTo(x, y);
    context.stroke();
  }
}

function redraw() {
  const canvas = $("paint-canvas");
  const context = canvas.getContext("2d");
  context.clearRect(0, 0, canvas.width, canvas.height);
  drawStrokes(context, getComputedStyle(document.documentElement).getPropertyValue("--paint").trim() || "#ff4081");
}

// the longest side of the photo as the bot sends it to be painted: the API takes masks of at most that size
const MASK_SIDE = 2048;

function maskPng() {
  // the mask at the photo's size as the bot will send it (fitted into MASK_SIDE): black, white where painted
  const {width, height} = state.photo;
  const scale = Math.min(1, MASK_SIDE / Math.max(width, height));
  const canvas = document.createElement("canvas");
  canvas.width = Math.max(1, Math.round(width * scale));
  canvas.height = Math.max(1, Math.round(height * scale));
  const context = canvas.getContext("2d");
  context.fillStyle = "#000";
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.scale(canvas.width / width, canvas.height / height);
  drawStrokes(context, "#fff");
  return canvas.toDataURL("image/png");
}

function applyZoom() {
  $("paint-zoom").style.transform = `translate(${paint.panX}px, ${paint.panY}px) scale(${paint.zoom})`;
}

function pinchState() {
  const [a, b] = [...paint.pointers.values()];
  return {distance: Math.hypot(a.x - b.x, a.y - b.y), x: (a.x + b.x) / 2, y: (a.y + b.y) / 2};
}

function paintDown(event) {
  event.preventDefault();
  $("paint-stage").setPointerCapture(event.pointerId);
  paint.pointers.set(event.pointerId, {x: event.clientX, y: event.clientY});
  if (paint.pointers.size === 2) {
    if (paint.stroke) { state.strokes.pop(); paint.stroke = null; redraw(); }  // two fingers: a pinch, not paint
    paint.pinch = {...pinchState(), zoom: paint.zoom, panX: paint.panX, panY: paint.panY};
    return;
  }
  if (paint.pointers.size > 2) return;
  paint.stroke = {size: brushPixels(), points: [toPhoto(event)]};
  state.strokes.push(paint.stroke);
  redraw();
}

function paintMove(event) {
  if (!paint.pointers.has(event.pointerId)) return;
  paint.pointers.set(event.pointerId, {x: event.clientX, y: event.clientY});
  if (paint.pinch && paint.pointers.size === 2) {
    const now = pinchState();
    const stage = $("paint-stage").getBoundingClientRect();
    const zoom = Math.min(5, Math.max(1, paint.pinch.zoom * now.distance / paint.pinch.distance));
    // keep the point between the fingers where it was
    const originX = paint.pinch.x - stage.left, originY = paint.pinch.y - stage.top;
    const ratio = zoom / paint.pinch.zoom;
    paint.zoom = zoom;
    paint.panX = originX - (originX - paint.pinch.panX) * ratio + (now.x - paint.pinch.x);
    paint.panY = originY - (originY - paint.pinch.panY) * ratio + (now.y - paint.pinch.y);
    if (zoom === 1) { paint.panX = 0; paint.panY = 0; }
    applyZoom();
    return;
  }
  if (paint.stroke) {
    paint.stroke.points.push(toPhoto(event));
    redraw();
  }
}

function paintUp(event) {
  paint.pointers.delete(event.pointerId);
  if (paint.pointers.size < 2) paint.pinch = null;
  if (!paint.pointers.size) paint.stroke = null;
}

async function replace() {
  if (!state.strokes.length) { say(text("paint_hint"), true); return; }
  await submit("jobs/replace", {photo: state.photoRef, mask: maskPng(), prompt: $("paint-prompt").value},
               $("replace"));
}

// --- Frame ---------------------------------------------------------------------------------------------------

const frame = {scale: 1, drag: null};

function frameOpen() {
  setRatio(state.ratio);
}

function layoutFrame() {
  const {width, height} = state.photo;
  const pads = state.pads;
  const stage = $("frame-stage").getBoundingClientRect();
  const fullWidth = width + pads.left + pads.right, fullHeight = height + pads.top + pads.bottom;
  const scale = Math.min((stage.width - 24) / fullWidth, (stage.height - 24) / fullHeight);
  frame.scale = scale;
  const box = $("frame-box");
  box.style.width = fullWidth * scale + "px";
  box.style.height = fullHeight * scale + "px";
  const photo = $("frame-photo");
  photo.style.width = width * scale + "px";
  photo.style.height = height * scale + "px";
  photo.style.left = pads.left * scale + "px";
  photo.style.top = pads.top * scale + "px";
  // "+60" as a left-to-right run of its own: a right-to-left sentence would put the sign after the digits
  for (const side of ["left", "top", "right", "bottom"]) {
    $("side-" + side).textContent = text("pixels", "\u2066+" + pads[side] + "\u2069");
  }
  $("expand").disabled = !(pads.left || pads.top || pads.right || pads.bottom);
}

function setRatio(ratio) {
  state.ratio = ratio;
  for (const button of document.querySelectorAll("[data-ratio]")) button.setAttribute("aria-pressed", String(button.dataset.ratio === ratio));
  if (ratio !== "free") {
    const [a, b] = ratio.split(":").map(Number);
    const {width, height} = state.photo;
    let addX = 0, addY = 0;
    if (width * b < height * a) addX = Math.min(2 * MAX_PADDING, Math.ceil(height * a / b) - width);
    else addY = Math.min(2 * MAX_PADDING, Math.ceil(width * b / a) - height);
    state.pads = {left: Math.floor(addX / 2), right: addX - Math.floor(addX / 2),
                  top: Math.floor(addY / 2), bottom: addY - Math.floor(addY / 2)};
  }
  layoutFrame();
}

function frameDown(event) {
  const edge = event.target.dataset.edge;
  if (!edge) return;
  event.preventDefault();
  event.target.setPointerCapture(event.pointerId);
  frame.drag = {edge, x: event.clientX, y: event.clientY, start: state.pads[edge], scale: frame.scale};
}

function frameMove(event) {
  const drag = frame.drag;
  if (!drag) return;
  // physical edges in both directions: the photo is never mirrored
  const moved = {left: drag.x - event.clientX, right: event.clientX - drag.x,
               top: drag.y - event.clientY, bottom: event.clientY - drag.y}[drag.edge];
  state.pads[drag.edge] = Math.max(0, Math.min(MAX_PADDING, Math.round(drag.start + moved / drag.scale)));
  if (state.ratio !== "free") {
    state.ratio = "free";
    for (const button of document.querySelectorAll("[data-ratio]")) button.setAttribute("aria-pressed", String(button.dataset.ratio === "free"));
  }
  layoutFrame();
}

function frameUp() { frame.drag = null; }

async function expand() {
  await submit("jobs/expand", {photo: state.photoRef, ...state.pads}, $("expand"));
}

// --- Styles --------------------------------------------------------------------------------------------------

async function stylesOpen() {
  $("styles-photo").hidden = !state.photoRef;
  const {groups} = await api("styles");
  const galleries = $("galleries");
  galleries.textContent = "";
  for (const group of groups) {
    const section = document.createElement("div");
    section.className = "gallery";
    const title = document.createElement("h2");
    title.textContent = group.title;
    section.append(title);
    let counts = null;
    if (group.counts) {
      counts = document.createElement("div");
      counts.className = "counts";
      counts.append(text("count"));
      for (const count of group.counts) {
        const button = document.createElement("button");
        button.type = "button";
        button.textContent = String(count);
        button.dataset.count = String(count);
        button.setAttribute("aria-pressed", String(count === group.counts[0]));
        button.addEventListener("click", () => {
          for (const other of counts.querySelectorAll("button")) other.setAttribute("aria-pressed", String(other === button));
        });
        counts.append(button);
      }
      section.append(counts);
    }
    const tiles = document.createElement("div");
    tiles.className = "tiles";
    for (const style of group.styles) {
      const tile = document.createElement("button");
      tile.type = "button";
      tile.className = "tile";
      tile.dataset.operation = group.operation;
      tile.dataset.style = style.key;
      tile.disabled = group.photo && !state.photoRef;
      if (style.preview) {
        const preview = document.createElement("img");
        preview.alt = "";
        preview.src = style.preview;
        tile.append(preview);
      } else {
        tile.classList.add("named");
      }
      const label = document.createElement("span");
      label.textContent = style.label;
      tile.append(label);
      tile.addEventListener("click", () => runStyle(group, style, counts, tile));
      tiles.append(tile);
    }
    section.append(tiles);
    galleries.append(section);
  }
}

async function runStyle(group, style, counts, tile) {
  const body = {operation: group.operation, style: style.key};
  if (group.photo) body.photo = state.photoRef;
  if (counts) body.count = Number(counts.querySelector('[aria-pressed="true"]').dataset.count);
  else body.prompt = $("styles-prompt").value;
  if (group.prompt && !body.prompt.trim()) { say(text("describe"), true); $("styles-prompt").focus(); return; }
  await submit("jobs/run", body, tile);
}

// --- My results ----------------------------------------------------------------------------------------------

async function resultsOpen() {
  const {results} = await api("results");
  const grid = $("grid");
  grid.textContent = "";
  $("no-results").hidden = results.length > 0;
  const observer = "IntersectionObserver" in window ? new IntersectionObserver(loadVisible, {rootMargin: "200px"}) : null;
  for (const result of results) {
    const button = document.createElement("button");
    button.type = "button";
    button.title = result.title;
    button.dataset.ref = result.ref;
    const image = document.createElement("img");
    image.alt = result.title;
    button.append(image);
    button.addEventListener("click", () => openResult(result));
    grid.append(button);
    if (observer) observer.observe(button); else fill(button);
  }
}

function loadVisible(entries, observer) {
  for (const entry of entries) {
    if (entry.isIntersecting) { observer.unobserve(entry.target); fill(entry.target); }
  }
}

async function fill(button) {
  try { button.firstChild.src = await pictureUrl(button.dataset.ref); } catch (error) { button.disabled = true; }
}

function actionButton(label, handler, className) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = label;
  if (className) button.className = className;
  button.addEventListener("click", () => handler(button));
  return button;
}

async function openResult(result) {
  $("grid").hidden = true;
  $("viewer").hidden = false;
  say("");
  $("viewer-photo").src = await pictureUrl(result.ref);
  const actions = $("viewer-actions");
  actions.textContent = "";
  actions.append(actionButton(text("share"), (button) => share(result.ref, button), "share"));
  actions.append(actionButton(text("paint"), () => choosePhoto(result.ref, "paint")));
  actions.append(actionButton(text("frame"), () => choosePhoto(result.ref, "frame")));
  actions.append(actionButton(text("styles"), () => { shown.styles = false; choosePhoto(result.ref, "styles"); }));
  for (const next of state.followups) {
    actions.append(actionButton(next.label, (button) => submit("jobs/run",
      {operation: next.operation, argument: next.argument, photo: result.ref}, button)));
  }
  if (tg && tg.BackButton) tg.BackButton.show();
}

function closeResult() {
  $("viewer").hidden = true;
  $("grid").hidden = false;
  if (tg && tg.BackButton) tg.BackButton.hide();
}

async function share(ref, button) {
  const answer = await submit("share", {photo: ref}, button);
  if (answer && tg && tg.shareMessage) {
    say("");
    tg.shareMessage(answer.id);
  }
}

// --- start ---------------------------------------------------------------------------------------------------

const SCREENS = {
  paint: {open: paintOpen}, frame: {open: frameOpen, again: layoutFrame},
  styles: {open: stylesOpen}, results: {open: resultsOpen},
};

function wire() {
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => { closeResult(); show(tab.dataset.screen); });
  const stage = $("paint-stage");
  stage.addEventListener("pointerdown", paintDown);
  stage.addEventListener("pointermove", paintMove);
  stage.addEventListener("pointerup", paintUp);
  stage.addEventListener("pointercancel", paintUp);
  $("undo").addEventListener("click", () => { state.strokes.pop(); redraw(); });
  $("clear").addEventListener("click", () => { state.strokes = []; redraw(); });
  $("replace").addEventListener("click", replace);
  for (const button of document.querySelectorAll("[data-ratio]")) button.addEventListener("click", () => setRatio(button.dataset.ratio));
  const box = $("frame-box");
  box.addEventListener("pointerdown", frameDown);
  box.addEventListener("pointermove", frameMove);
  box.addEventListener("pointerup", frameUp);
  box.addEventListener("pointercancel", frameUp);
  $("expand").addEventListener("click", expand);
  window.addEventListener("resize", () => { if (!$("frame").hidden && state.photo) layoutFrame(); });
  if (tg && tg.BackButton) tg.BackButton.onClick(closeResult);
}

async function start() {
  if (tg) { tg.ready(); tg.expand(); if (tg.onEvent) tg.onEvent("themeChanged", applyTheme); }
  applyTheme();
  wire();
  try {
    applyTexts(await api("me"));
  } catch (error) {
    $("loading").hidden = true;
    say(error.message, true);
    return;
  }
  $("loading").hidden = true;
  await show(screenName());
  document.body.dataset.ready = "true";
}

start();
