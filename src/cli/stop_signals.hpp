// SIGINT and SIGTERM for brisk serve, waited for on a thread of their own from the start.
// While the model loads, a stop signal ends the process at once (a load has nothing to save
// and may sit for minutes in a read or a device upload); after stop_signals_ready() it wakes
// wait_for_stop_signal() instead, for a graceful shutdown.
#pragma once

namespace brisk::cli {

// Blocks SIGINT and SIGTERM in the calling thread, and so in every thread started after it
// (call it before any other), and starts the thread that waits for them. Once per process.
void start_stop_signal_thread();
void stop_signals_ready();
int wait_for_stop_signal();  // the signal that came

}  // namespace brisk::cli
