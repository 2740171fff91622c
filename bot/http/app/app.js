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
  screens: {},          // {paint: {price, max_side}, frame: {...}} from the API
  prices: {},           // what a style tap costs: {"art": "1 credit", "headshot 2": "2 credits", ...}
  service: null,        // [width, height] the service gets for Paint: the mask is made at this size
  redo: [],             // Paint: strokes undone, to redo
  erasing: false, showMask: true,
  stack: [],            // what the back button returns to: screens and the result viewer
  packs: [],            // the packs of credits on sale here: [{id, label}]
  viewing: null,        // the result the viewer shows (or last showed)
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
    throw Object.assign(new Error(text("offline")), {code: "offline"});
  }
  if (!response.ok) {
    let message = text("failed"), code = "failed";
    try { ({message = message, error: code = code} = await response.json()); } catch (error) { /* not JSON */ }
    if (response.status === 401) { message = text("expired"); code = "expired"; }
    throw Object.assign(new Error(message), {code});
  }
  if (options.blob) return {blob: await response.blob(), size: response.headers.get("X-Image-Size")};
  return response.json();
}

// pictures come as copies sized for the phone (the server scales and caches them); a failed load is retried
// on the next ask, not remembered
const blobs = new Map();  // "size:ref" -> Promise of {url, width, height} (the original's size)
function picture(ref, size) {
  const key = size + ":" + ref;
  if (!blobs.has(key)) {
    const loading = api(`picture?size=${size}&ref=${encodeURIComponent(ref)}`, {blob: true}).then(({blob, size: original}) => {
      const [width, height] = (original || "0x0").split("x").map(Number);
      return {url: URL.createObjectURL(blob), width, height};
    });
    loading.catch(() => blobs.delete(key));
    blobs.set(key, loading);
  }
  return blobs.get(key);
}
const pictureUrl = (ref, size = "display") => picture(ref, size).then((found) => found.url);

function text(name, count) {
  const value = state.texts[name] || "";
  return count === undefined ? value : value.replace("{count}", String(count));
}

const ISOLATE = (value) => "\u2068" + value + "\u2069";

// an error, or a notice, at the top of the screen (the bar is sticky), with what can be done about it
function say(message, isError, actions = []) {
  const box = $("message");
  $("message-text").textContent = message;
  const buttons = $("message-actions");
  buttons.textContent = "";
  for (const [name, label, handler, pack] of actions) {
    const button = actionButton(label, handler);
    button.dataset.action = name;
    if (pack) button.dataset.pack = pack;
    buttons.append(button);
  }
  box.hidden = !message;
  box.classList.toggle("error", Boolean(isError));
  if (message) box.scrollIntoView({block: "nearest"});
  if (message && tg && tg.HapticFeedback) tg.HapticFeedback.notificationOccurred(isError ? "error" : "success");
}

// what a failure offers: reopening when the session expired, buying when credits ran out, else trying again
function sayError(error, retry) {
  if (error.code === "expired") say(error.message, true, [["reopen", text("reopen"), () => tg && tg.close()]]);
  else if (error.code === "credits" && state.packs.length) {
    say(error.message, true, state.packs.map((pack) => ["buy", pack.label, (button) => buy(pack, button), pack.id]));
  } else if (error.code === "credits" && state.canBuy) say(error.message, true, [["buy", text("buy"), buyCredits]]);
  else if (retry) say(error.message, true, [["retry", text("retry"), retry]]);
  else say(error.message, true);
}

function buyCredits() {
  // no pack to buy here (only the plan, or a client without openInvoice): the chat's /buy offers it
  if (tg) tg.close();
}

// a pack bought in place: Telegram's own payment sheet over the app (Bot API 6.1); the bot credits the payment
// from Telegram's receipt, as it does for the chat's /buy
async function buy(pack, button) {
  if (!tg || !tg.openInvoice || !tg.isVersionAtLeast || !tg.isVersionAtLeast("6.1")) { buyCredits(); return; }
  button.disabled = true;
  try {
    const {link} = await api("invoice", {body: {pack: pack.id}});
    tg.openInvoice(link, (status) => { afterPayment(status); });
  } catch (error) {
    sayError(error);
  } finally {
    button.disabled = false;
  }
}

async function afterPayment(status) {
  if (status === "failed") { say(text("failed"), true); return; }
  if (status !== "paid" && status !== "pending") return;  // cancelled: the offer stays on screen
  say(text("paying"));
  // the receipt reaches the bot a moment after the sheet closes: the balance is asked until it changes
  const before = $("credits").textContent;
  for (let tries = 0; tries < 15; tries++) {
    await refreshCredits();
    if ($("credits").textContent !== before) { say(text("paid")); return; }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

// a done job: a confirmation over the screen, whatever its scroll, and the form emptied so nothing goes twice
function confirmDone(message) {
  $("done-text").textContent = message;
  $("done").hidden = false;
  if (tg && tg.HapticFeedback) tg.HapticFeedback.notificationOccurred("success");
  resetForms();
  $("keep-editing").focus();
}

function resetForms() {
  state.strokes = []; state.redo = [];
  state.pads = {left: 0, top: 0, right: 0, bottom: 0};
  $("paint-prompt").value = "";
  if (state.photo) { redraw(); if (!$("frame").hidden || shown.frame) setRatio("free"); }
  updateMain();
}

async function submit(path, body, button) {
  if (state.busy) return;
  state.busy = true;
  if (button) button.disabled = true;
  mainProgress(true);
  say("");
  try {
    const answer = await api(path, {body});
    confirmDone(answer.message);
    refreshCredits();
    return answer;
  } catch (error) {
    sayError(error);
  } finally {
    state.busy = false;
    if (button) button.disabled = false;
    mainProgress(false);
    updateMain();
  }
}

// --- Telegram's controls: the main button, the back button, swipes, closing ---------------------------------

const MAIN = {paint: {label: "paint_go", valid: () => state.strokes.length > 0 && $("paint-prompt").value.trim(), run: () => replace()},
              frame: {label: "frame_go", valid: () => Object.values(state.pads).some(Boolean), run: () => expand()}};
const hasMain = () => Boolean(tg && tg.MainButton && tg.isVersionAtLeast && tg.isVersionAtLeast("6.1"));

function current() { return state.stack[state.stack.length - 1] || screenName(); }

function updateMain() {
  const screen = current();
  const action = MAIN[screen];
  const valid = Boolean(action && state.photo && action.valid()) && !state.busy && $("done").hidden;
  const price = action && state.screens[screen] && state.screens[screen].price;
  const label = action ? text(action.label) + (price ? " · " + ISOLATE(price) : "") : "";
  for (const [name, entry] of Object.entries(MAIN)) {
    const button = $(name === "paint" ? "replace" : "expand");
    button.textContent = name === screen ? label : text(entry.label);
    button.disabled = !(name === screen && valid);
    button.hidden = hasMain();
  }
  if (hasMain()) {
    tg.MainButton.setParams({text: label || " ", is_visible: Boolean(action) && Boolean(state.photo), is_active: valid});
  }
  const unsent = state.strokes.length > 0 || Object.values(state.pads).some(Boolean);
  if (tg && tg.enableClosingConfirmation) {
    if (unsent) tg.enableClosingConfirmation(); else tg.disableClosingConfirmation();
  }
}

function mainProgress(on) {
  if (!hasMain()) return;
  if (on) tg.MainButton.showProgress(false); else tg.MainButton.hideProgress();
}

function pressMain() {
  const action = MAIN[current()];
  if (action && !state.busy && action.valid() && $("done").hidden) action.run();
}

// drawing and dragging must not pull the app down (Bot API 7.7)
function holdSwipes(hold) {
  if (!tg || !tg.disableVerticalSwipes) return;
  if (hold) tg.disableVerticalSwipes(); else tg.enableVerticalSwipes();
}

function go(view) {
  if (current() === view) return;
  state.stack.push(view);
  showView(view);
}

function back() {
  if (state.stack.length > 1) state.stack.pop();
  showView(current());
}

function showView(view) {
  // back to the viewer from another screen: My results with the result that was open
  if (view === "viewer") { show("results"); if (state.viewing) openResult(state.viewing, false); return; }
  closeResult(false);
  show(view);
}

function updateBack() {
  if (!tg || !tg.BackButton) return;
  if (state.stack.length > 1) tg.BackButton.show(); else tg.BackButton.hide();
}

// a choice that spends credits is confirmed first, in Telegram's own popup where there is one
function confirmCost(price) {
  if (!price || !tg || !tg.showPopup || !tg.isVersionAtLeast || !tg.isVersionAtLeast("6.2")) return Promise.resolve(true);
  return new Promise((resolve) => tg.showPopup(
    {message: text("confirm").replace("{price}", ISOLATE(price)), buttons: [{id: "go", type: "ok"}, {type: "cancel"}]},
    (id) => resolve(id === "go")));
}

async function refreshCredits() {
  try {
    const me = await api("me");
    $("credits").textContent = me.credits || "";
  } catch (error) { /* the header only loses its figure */ }
}

// the first screen's texts and direction, built into the page, from the language Telegram says the person uses
function firstScreen() {
  let all = {};
  try { all = JSON.parse($("first-screen").textContent); } catch (error) { /* the page was changed: English below */ }
  const user = tg && tg.initDataUnsafe && tg.initDataUnsafe.user;
  const code = ((user && user.language_code) || navigator.language || "en").slice(0, 2).toLowerCase();
  const found = all[code] || all.en || {texts: {}, rtl: false};
  state.texts = found.texts;
  document.documentElement.lang = all[code] ? code : "en";
  document.documentElement.dir = found.rtl ? "rtl" : "ltr";
  for (const element of document.querySelectorAll("[data-text]")) {
    if (state.texts[element.dataset.text]) element.textContent = state.texts[element.dataset.text];
  }
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
  state.canBuy = Boolean(me.can_buy);
  state.packs = me.packs || [];
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

function markTab(screen) {
  for (const tab of document.querySelectorAll(".tab")) {
    if (tab.dataset.screen === screen) tab.setAttribute("aria-current", "page"); else tab.removeAttribute("aria-current");
  }
}

const shown = {};
async function show(screen) {
  $("done").hidden = true;
  for (const section of document.querySelectorAll(".screen")) section.hidden = section.id !== screen;
  markTab(screen);
  document.title = text(screen);
  const needsPhoto = screen === "paint" || screen === "frame";
  $("no-photo").hidden = !(needsPhoto && !state.photoRef);
  updateBack();
  updateMain();
  if (needsPhoto && !state.photoRef) { $(screen).hidden = true; return; }
  try {
    if (needsPhoto || (screen === "styles" && state.photoRef)) await loadPhoto();
    if (!shown[screen]) { shown[screen] = true; await SCREENS[screen].open(); }
    else if (SCREENS[screen].again) SCREENS[screen].again();
  } catch (error) {
    shown[screen] = false;
    sayError(error, () => { say(""); show(screen); });
  }
  updateMain();
}

async function loadPhoto() {
  if (state.photo && state.photo.ref === state.photoRef) return;
  const ref = state.photoRef;
  const sharp = picture(ref, "display");
  // the tile-sized copy is a few kilobytes and made in a blink: shown first when it comes first, so painting
  // can start while the sharp copy is on its way (it needs the photo's own size, which both copies carry)
  const small = picture(ref, "thumb").then((copy) => (copy.width ? copy : sharp), () => sharp);
  const found = await Promise.race([sharp, small]);
  const image = new Image();
  image.src = found.url;
  await image.decode();
  // the photo's own size (the copy is smaller): paddings are in its pixels, the mask in the service's
  const width = found.width || image.naturalWidth, height = found.height || image.naturalHeight;
  state.photo = {ref, url: found.url, width, height};
  const most = state.screens.paint && state.screens.paint.max_side;
  const scale = most && Math.max(width, height) > most ? most / Math.max(width, height) : 1;
  state.service = [Math.max(1, Math.round(width * scale)), Math.max(1, Math.round(height * scale))];
  state.strokes = []; state.redo = [];
  state.pads = {left: 0, top: 0, right: 0, bottom: 0};
  showPhoto(found.url, false);
  $("skeleton-paint").hidden = true;
  $("skeleton-frame").hidden = true;
  for (const name of ["paint", "frame"]) shown[name] = false;
  sharp.then(async (copy) => {
    if (state.photoRef !== ref) return;
    if (copy.url !== found.url) {
      const better = new Image();
      better.src = copy.url;
      await better.decode();
      if (state.photoRef !== ref) return;
      state.photo.url = copy.url;
    }
    showPhoto(copy.url, true);
  }, () => { /* the small copy stays: painting and framing work on it */ });
}

function showPhoto(url, sharp) {
  for (const id of ["paint-photo", "frame-photo"]) {
    if ($(id).src !== url) $(id).src = url;
    $(id).dataset.sharp = String(sharp);
  }
}

async function choosePhoto(ref, screen) {
  const unsent = state.strokes.length > 0 || Object.values(state.pads).some(Boolean);
  if (unsent && ref !== state.photoRef && tg && tg.showConfirm) {
    // a painting or a frame is not dropped without asking
    const keep = await new Promise((resolve) => tg.showConfirm(text("confirm_drop") || text("clear") + "?", resolve));
    if (!keep) return;
  }
  state.photoRef = ref;
  say("");
  state.stack = [screen];
  show(screen);
}

// --- Paint ---------------------------------------------------------------------------------------------------

const paint = {zoom: 1, panX: 0, panY: 0, pointers: new Map(), pinch: null, stroke: null};

function paintOpen() {
  const canvas = $("paint-canvas");
  [canvas.width, canvas.height] = state.service;
  paint.zoom = 1; paint.panX = 0; paint.panY = 0;
  applyZoom();
  redraw();
}

function toPhoto(event) {
  const rect = $("paint-canvas").getBoundingClientRect();
  const canvas = $("paint-canvas");
  return [(event.clientX - rect.left) * canvas.width / rect.width,
          (event.clientY - rect.top) * canvas.height / rect.height];
}

function brushPixels() {
  // the brush slider is in screen pixels: the same stroke width whatever the zoom
  const rect = $("paint-canvas").getBoundingClientRect();
  return Number($("brush").value) * $("paint-canvas").width / rect.width;
}

function drawStrokes(context, colour) {
  context.lineCap = "round";
  context.lineJoin = "round";
  context.strokeStyle = colour;
  context.fillStyle = colour;
  for (const stroke of state.strokes) {
    // the eraser paints transparency over what was painted before it
    context.globalCompositeOperation = stroke.erase ? "destination-out" : "source-over";
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
  context.globalCompositeOperation = "source-over";
}

function redraw() {
  const canvas = $("paint-canvas");
  const context = canvas.getContext("2d");
  context.clearRect(0, 0, canvas.width, canvas.height);
  drawStrokes(context, getComputedStyle(document.documentElement).getPropertyValue("--paint").trim() || "#ff4081");
}

function maskPng() {
  // the mask at the size the service gets: black, white where painted (the strokes, erasing included, are
  // drawn on transparency first, then laid on black)
  const [width, height] = state.service;
  const strokes = document.createElement("canvas");
  strokes.width = width; strokes.height = height;
  drawStrokes(strokes.getContext("2d"), "#fff");
  const canvas = document.createElement("canvas");
  canvas.width = width; canvas.height = height;
  const context = canvas.getContext("2d");
  context.fillStyle = "#000";
  context.fillRect(0, 0, width, height);
  context.drawImage(strokes, 0, 0);
  return canvas.toDataURL("image/png");
}

function applyZoom() {
  $("paint-zoom").style.transform = `translate(${paint.panX}px, ${paint.panY}px) scale(${paint.zoom})`;
}

function pinchState() {
  const [a, b] = [...paint.pointers.values()];
  return {distance: Math.hypot(a.x - b.x, a.y - b.y), x: (a.x + b.x) / 2, y: (a.y + b.y) / 2};
}

// the loupe: the photo and the paint under the finger, magnified, lifted above the finger that hides them
const LOUPE = {size: 112, zoom: 2, lift: 56, margin: 8};

function showLoupe(event) {
  const loupe = $("loupe"), canvas = $("paint-canvas"), photo = $("paint-photo");
  const ratio = window.devicePixelRatio || 1;
  if (loupe.width !== Math.round(LOUPE.size * ratio)) loupe.width = loupe.height = Math.round(LOUPE.size * ratio);
  const rect = canvas.getBoundingClientRect();
  const perScreen = canvas.width / rect.width;  // canvas pixels per screen pixel, whatever the zoom
  const [x, y] = toPhoto(event);
  const half = LOUPE.size / LOUPE.zoom / 2 * perScreen;  // the area shown, in canvas pixels from its centre
  const context = loupe.getContext("2d");
  context.fillStyle = getComputedStyle(document.documentElement).getPropertyValue("--surface").trim() || "#888";
  context.fillRect(0, 0, loupe.width, loupe.height);
  const toImage = (photo.naturalWidth || canvas.width) / canvas.width;  // the display copy is not the mask's size
  context.drawImage(photo, (x - half) * toImage, (y - half) * toImage, 2 * half * toImage, 2 * half * toImage,
                    0, 0, loupe.width, loupe.height);
  if (state.showMask) {
    context.globalAlpha = 0.6;  // as the paint shows over the photo
    context.drawImage(canvas, x - half, y - half, 2 * half, 2 * half, 0, 0, loupe.width, loupe.height);
    context.globalAlpha = 1;
  }
  // the brush's edge, so the person sees what the next move covers: a dark and a light ring, seen on any photo
  for (const [colour, width] of [["rgba(0, 0, 0, 0.75)", 3], ["#ffffff", 1]]) {
    context.beginPath();
    context.arc(loupe.width / 2, loupe.height / 2, Number($("brush").value) / 2 * LOUPE.zoom * ratio, 0, 2 * Math.PI);
    context.lineWidth = width * ratio;
    context.strokeStyle = colour;
    context.stroke();
  }
  // above the finger; below it near the top of the screen; always inside the screen
  let top = event.clientY - LOUPE.lift - LOUPE.size;
  if (top < LOUPE.margin) top = event.clientY + LOUPE.lift;
  const left = Math.min(Math.max(event.clientX - LOUPE.size / 2, LOUPE.margin), innerWidth - LOUPE.size - LOUPE.margin);
  loupe.style.transform = `translate(${Math.round(left)}px, ${Math.round(top)}px)`;
  loupe.hidden = false;
}

function hideLoupe() { $("loupe").hidden = true; }

function paintDown(event) {
  event.preventDefault();
  $("paint-stage").setPointerCapture(event.pointerId);
  paint.pointers.set(event.pointerId, {x: event.clientX, y: event.clientY});
  if (paint.pointers.size === 2) {
    if (paint.stroke) { state.strokes.pop(); paint.stroke = null; redraw(); hideLoupe(); }  // two fingers: a pinch
    paint.pinch = {...pinchState(), zoom: paint.zoom, panX: paint.panX, panY: paint.panY};
    return;
  }
  if (paint.pointers.size > 2) return;
  holdSwipes(true);
  paint.stroke = {size: brushPixels(), points: [toPhoto(event)], erase: state.erasing};
  state.strokes.push(paint.stroke);
  state.redo = [];
  redraw();
  showLoupe(event);
  updateMain();
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
    showLoupe(event);
  }
}

function paintUp(event) {
  paint.pointers.delete(event.pointerId);
  if (paint.pointers.size < 2) paint.pinch = null;
  if (!paint.pointers.size) { paint.stroke = null; holdSwipes(false); hideLoupe(); }
}

async function replace() {
  if (!state.strokes.length) { say(text("paint_hint"), true); return; }
  if (!$("paint-prompt").value.trim()) { say(text("paint_prompt"), true); $("paint-prompt").focus(); return; }
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
  updateMain();
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
  holdSwipes(true);
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

function frameUp() { if (frame.drag) holdSwipes(false); frame.drag = null; }

async function expand() {
  await submit("jobs/expand", {photo: state.photoRef, ...state.pads}, $("expand"));
}

// --- Styles --------------------------------------------------------------------------------------------------

async function stylesOpen() {
  $("styles-photo").hidden = !state.photoRef;
  if (state.photoRef) pictureUrl(state.photoRef, "thumb").then((url) => { shownOnLoad($("styles-photo"), url); }, () => {});
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
        preview.loading = "lazy";
        preview.decoding = "async";
        // shown once loaded: never a broken-image icon while it loads
        preview.addEventListener("load", () => { preview.classList.add("loaded"); tile.classList.add("loaded"); });
        preview.addEventListener("error", () => tile.classList.add("named", "loaded"));  // its name, not a skeleton
        preview.src = style.preview;
        tile.append(preview);
      } else {
        tile.classList.add("named");
      }
      const label = document.createElement("span");
      label.textContent = style.label;
      label.dir = "auto";  // "GPT Image 2" in an Arabic page keeps its own order
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
  if (!await confirmCost(state.prices[body.count ? `${group.operation} ${body.count}` : group.operation])) return;
  await submit("jobs/run", body, tile);
}

// --- My results ----------------------------------------------------------------------------------------------

// My results asks again every few seconds while it is shown, so a result delivered meanwhile appears
const REFRESH_MS = 4000;
let refreshTimer = null;
let listed = null;  // the refs listed last; null: nothing listed yet (the grid holds its skeleton)

function scheduleRefresh() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(async () => {
    if (!$("results").hidden && document.visibilityState !== "hidden") {
      try { await resultsOpen(); } catch (error) { /* the next round tries again */ }
    }
    scheduleRefresh();
  }, REFRESH_MS);
}

function showPending(pending) {
  $("pending").hidden = !pending.length;
  const list = $("pending-list");
  list.textContent = "";
  for (const job of pending) {
    const item = document.createElement("li");
    item.textContent = job.title;
    list.append(item);
  }
}

async function resultsOpen() {
  scheduleRefresh();
  const [{results}, {pending}] = await Promise.all([api("results"), api("pending")]);
  showPending(pending);
  const key = results.map((result) => result.ref).join(" ");
  if (key === listed && $("grid").childElementCount) return;  // nothing new: the tiles stay as they are
  listed = key;
  const grid = $("grid");
  grid.textContent = "";
  grid.classList.remove("skeleton-tiles");
  $("no-results").hidden = results.length > 0 || pending.length > 0;
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
    if (result.kind === "video") markVideo(button, result);
    // a video without a thumbnail (kept before thumbnails were) has no picture to ask for: its placeholder stays
    if (!result.poster) continue;
    if (observer) observer.observe(button); else fill(button);
  }
}

// a video's tile: its poster (or a placeholder) under a play badge, named as a video for screen readers
function markVideo(button, result) {
  button.classList.add("video");
  button.setAttribute("aria-label", text("video_label") + ": " + result.title);
  const badge = document.createElement("span");
  badge.className = "play";
  badge.setAttribute("aria-hidden", "true");
  button.append(badge);
  if (!result.poster) button.classList.add("loaded", "no-poster");
}

function loadVisible(entries, observer) {
  for (const entry of entries) {
    if (entry.isIntersecting) { observer.unobserve(entry.target); fill(entry.target); }
  }
}

async function fill(button) {
  try {
    const image = button.firstChild;
    image.addEventListener("load", () => button.classList.add("loaded"), {once: true});
    image.src = await pictureUrl(button.dataset.ref, "thumb");
  } catch (error) { button.disabled = true; }
}

// a picture that is a skeleton until it has loaded
function shownOnLoad(image, url) {
  image.addEventListener("load", () => image.classList.add("loaded"), {once: true});
  image.src = url;
}

function actionButton(label, handler, className) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = label;
  if (className) button.className = className;
  button.addEventListener("click", () => handler(button));
  return button;
}

async function openResult(result, step = true) {
  $("grid").hidden = true;
  $("pending").hidden = true;
  $("viewer").hidden = false;
  say("");
  state.viewing = result;
  if (step) state.stack.push("viewer");
  updateBack();
  const video = result.kind === "video";
  $("viewer").classList.toggle("video", video);
  $("viewer-photo").hidden = !result.poster;
  $("viewer-photo").alt = video ? text("video_label") + ": " + result.title : "";
  $("viewer-photo").removeAttribute("src");
  $("viewer-photo").classList.remove("loaded");
  if (result.poster) pictureUrl(result.ref).then((url) => shownOnLoad($("viewer-photo"), url), (error) => sayError(error));
  const actions = $("viewer-actions");
  actions.textContent = "";
  if (video) {
    const note = document.createElement("p");
    note.className = "hint";
    note.textContent = text("video_hint");
    actions.append(note);
  }
  if (canShare()) actions.append(actionButton(text("share"), (button) => share(result.ref, button), "share"));
  else {
    const note = document.createElement("p");
    note.className = "hint";
    note.textContent = text("no_share");
    actions.append(note, actionButton(text("back_to_chat"), () => tg && tg.close(), "share"));
  }
  if (video) return;  // painting, extending, styles and the one-tap follow-ups work on photos only
  actions.append(actionButton(text("paint"), () => choosePhoto(result.ref, "paint")));
  actions.append(actionButton(text("frame"), () => choosePhoto(result.ref, "frame")));
  actions.append(actionButton(text("styles"), () => { shown.styles = false; choosePhoto(result.ref, "styles"); }));
  for (const next of state.followups) {
    actions.append(actionButton(next.label, async (button) => {
      if (await confirmCost(state.prices[next.operation])) {
        submit("jobs/run", {operation: next.operation, argument: next.argument, photo: result.ref}, button);
      }
    }));
  }
}

function closeResult(pop = true) {
  if ($("viewer").hidden) return;
  $("viewer").hidden = true;
  $("grid").hidden = false;
  if (pop && current() === "viewer") state.stack.pop();
  updateBack();
}

// shareMessage arrived in Bot API 8.0: older clients get the way round it instead of a silent failure
const canShare = () => Boolean(tg && tg.shareMessage && tg.isVersionAtLeast && tg.isVersionAtLeast("8.0"));

async function share(ref, button) {
  if (state.busy) return;
  button.disabled = true;
  try {
    const answer = await api("share", {body: {photo: ref}});
    tg.shareMessage(answer.id);
  } catch (error) {
    sayError(error);
  } finally {
    button.disabled = false;
  }
}

// --- start ---------------------------------------------------------------------------------------------------

const SCREENS = {
  paint: {open: paintOpen}, frame: {open: frameOpen, again: layoutFrame},
  styles: {open: stylesOpen}, results: {open: resultsOpen},
};

function wire() {
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => go(tab.dataset.screen));
  const stage = $("paint-stage");
  stage.addEventListener("pointerdown", paintDown);
  stage.addEventListener("pointermove", paintMove);
  stage.addEventListener("pointerup", paintUp);
  stage.addEventListener("pointercancel", paintUp);
  $("undo").addEventListener("click", () => { if (state.strokes.length) state.redo.push(state.strokes.pop()); redraw(); updateMain(); });
  $("redo").addEventListener("click", () => { if (state.redo.length) state.strokes.push(state.redo.pop()); redraw(); updateMain(); });
  $("clear").addEventListener("click", () => { state.strokes = []; state.redo = []; redraw(); updateMain(); });
  $("eraser").addEventListener("click", () => {
    state.erasing = !state.erasing;
    $("eraser").setAttribute("aria-pressed", String(state.erasing));
  });
  $("mask-toggle").addEventListener("click", () => {
    state.showMask = !state.showMask;
    $("mask-toggle").setAttribute("aria-pressed", String(state.showMask));
    $("paint-canvas").hidden = !state.showMask;
  });
  const brushDot = () => { $("brush-dot").style.width = $("brush-dot").style.height = $("brush").value + "px"; };
  $("brush").addEventListener("input", brushDot);
  brushDot();
  $("paint-prompt").addEventListener("input", updateMain);
  $("replace").addEventListener("click", pressMain);
  $("back-to-chat").addEventListener("click", () => { if (tg) tg.close(); });
  $("keep-editing").addEventListener("click", () => { $("done").hidden = true; updateMain(); });
  for (const button of document.querySelectorAll("[data-ratio]")) button.addEventListener("click", () => setRatio(button.dataset.ratio));
  const box = $("frame-box");
  box.addEventListener("pointerdown", frameDown);
  box.addEventListener("pointermove", frameMove);
  box.addEventListener("pointerup", frameUp);
  box.addEventListener("pointercancel", frameUp);
  $("expand").addEventListener("click", pressMain);
  window.addEventListener("resize", () => { if (!$("frame").hidden && state.photo) layoutFrame(); });
  if (tg && tg.BackButton) tg.BackButton.onClick(back);
  if (hasMain()) tg.MainButton.onClick(pressMain);
  document.addEventListener("visibilitychange", () => { if (!$("results").hidden && document.visibilityState === "visible") resultsOpen().catch(() => {}); });
}

async function start() {
  $("loading").hidden = false;
  say("");
  try {
    // in parallel: the texts, the screens' prices, and the photo the screen shows (My results shows none)
    const shows = state.photoRef && screenName() !== "results";
    for (const size of shows ? ["thumb", "display"] : []) picture(state.photoRef, size).catch(() => {});
    const [me, {screens, prices}] = await Promise.all([api("me"), api("screens")]);
    applyTexts(me);
    state.screens = screens;
    state.prices = prices;
  } catch (error) {
    $("loading").hidden = true;
    markTab(screenName());  // the tabs still say where the person is while the bot is out of reach
    sayError(error, start);
    return;
  }
  $("loading").hidden = true;
  state.stack = [screenName()];
  await show(screenName());
  document.body.dataset.ready = "true";
}

if (tg) { tg.ready(); tg.expand(); if (tg.onEvent) tg.onEvent("themeChanged", applyTheme); }
applyTheme();
firstScreen();
wire();
start();
