"""EP-Mem: elastic privacy memory."""
