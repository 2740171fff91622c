"""One module per operation: how the sandbox reads its endpoint's body and renders its result."""
