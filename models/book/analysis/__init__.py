"""Pure analysis helpers for the chapters: turn runs' logs and tables into the numbers the prose states."""
