"""canal's benchmark harness: one statistics and reporting module shared by
every benchmark family (micro, seed programs, channel peers, IPC methods)."""
