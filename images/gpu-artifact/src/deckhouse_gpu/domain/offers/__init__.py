"""What a node offers to DRA: devices, counters and ResourceSlice layouts, and the API server's
rules for them."""
