#include "plugins/crash_note.hpp"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace agenthost::plugins {
namespace {

// Per thread: the note being shown (a pointer into a buffer of the same thread), nullptr outside
// plugin code. Read by the signal handler on the faulting thread: initial-exec TLS of the
// executable, so reading it there is async-signal-safe.
constexpr size_t kNoteBytes = 384;
thread_local char note_buffers[4][kNoteBytes];
thread_local int note_depth = 0;
thread_local const char* current_note = nullptr;

// Process-wide: the in-process plugin calls running now, for a fatal signal on a thread that is in
// none (a plugin's own thread: a Go runtime's goroutine, a Rust thread, a C worker). Fixed slots
// of static storage, claimed and released with atomics: the handler reads them without locks and
// never follows a pointer into a thread that may have ended. Past kRunningSlots calls at once the
// rest go unlisted.
constexpr size_t kRunningSlots = 16;
constexpr size_t kRunningBytes = 160;
struct RunningCall {
    std::atomic<bool> claimed{false};
    std::atomic<bool> ready{false};
    char text[kRunningBytes] = {};
};
RunningCall running_calls[kRunningSlots];
thread_local int running_slot = -1;

void write_text(const char* text) { (void)!::write(STDERR_FILENO, text, std::strlen(text)); }

void write_signal_head(int sig) {
    char head[48] = "\nagenthost: signal ";
    size_t n = std::strlen(head);
    char digits[12];
    size_t d = 0;
    for (int v = sig; v > 0 && d < sizeof digits; v /= 10) digits[d++] = static_cast<char>('0' + v % 10);
    while (d > 0) head[n++] = digits[--d];
    (void)!::write(STDERR_FILENO, head, n);
}

// A signal on a thread in no plugin call, while some ran: they are named, as the likely cause.
void write_running_calls(int sig) {
    bool any = false;
    for (const RunningCall& call : running_calls) {
        if (!call.ready.load(std::memory_order_acquire)) continue;
        if (!any) {
            write_signal_head(sig);
            write_text(
                " on a thread in no plugin call (a plugin's own thread, such as a Go runtime's, or the host's),"
                " while these in-process plugin calls ran:\n");
            any = true;
        }
        write_text("  ");
        write_text(call.text);
    }
    if (any)
        write_text(
            "Run a plugin that starts threads of its own with [plugins.NAME] isolation = \"process\" in "
            "agenthost.toml to keep the host alive when it fails.\n");
}

// Lists this thread's call among the running ones, in a free slot if there is one.
void claim_running_slot(std::string_view plugin, std::string_view what) {
    if (running_slot >= 0) return;  // nested: the outer call is listed
    for (size_t i = 0; i < kRunningSlots; ++i) {
        bool expected = false;
        if (!running_calls[i].claimed.compare_exchange_strong(expected, true, std::memory_order_acquire)) continue;
        std::snprintf(running_calls[i].text, kRunningBytes, "plugin '%.*s' running '%.*s'\n",
                      static_cast<int>(std::min<size_t>(plugin.size(), 64)), plugin.data(),
                      static_cast<int>(std::min<size_t>(what.size(), 64)), what.data());
        running_calls[i].ready.store(true, std::memory_order_release);
        running_slot = static_cast<int>(i);
        return;
    }
}

void release_running_slot() {
    if (running_slot < 0) return;
    running_calls[running_slot].ready.store(false, std::memory_order_release);
    running_calls[running_slot].claimed.store(false, std::memory_order_release);
    running_slot = -1;
}

// Only async-signal-safe calls here: write(2), strlen, and digits formatted by hand.
void on_fatal_signal(int sig) {
    if (const char* note = current_note) {
        write_signal_head(sig);
        write_text(": ");
        write_text(note);
    } else {
        write_running_calls(sig);
    }
    std::signal(sig, SIG_DFL);  // die of the same signal, as the shell and the supervisor expect
    std::raise(sig);
}

}  // namespace

CrashNote::CrashNote(std::string_view plugin, std::string_view what) : previous_(current_note) {
    int slot = note_depth < 4 ? note_depth : 3;
    ++note_depth;
    char* buffer = note_buffers[slot];
    int plugin_len = static_cast<int>(std::min<size_t>(plugin.size(), 64));
    int what_len = static_cast<int>(std::min<size_t>(what.size(), 64));
    std::snprintf(buffer, kNoteBytes,
                  "the in-process plugin '%.*s' crashed the host while running '%.*s'. Set [plugins.%.*s] "
                  "isolation = \"process\" in agenthost.toml to keep the host alive when it fails.\n",
                  plugin_len, plugin.data(), what_len, what.data(), plugin_len, plugin.data());
    current_note = buffer;
    if (note_depth == 1) claim_running_slot(plugin, what);
}

CrashNote::~CrashNote() {
    current_note = previous_;
    --note_depth;
    if (note_depth == 0) release_running_slot();
}

CrashNote::Lifted::Lifted() : previous_(current_note) { current_note = nullptr; }
CrashNote::Lifted::~Lifted() { current_note = previous_; }

void install_crash_note_handlers() {
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
        struct sigaction action {};
        action.sa_handler = on_fatal_signal;
        sigemptyset(&action.sa_mask);
        action.sa_flags = SA_RESETHAND | SA_NODEFER;
        ::sigaction(sig, &action, nullptr);
    }
}

}  // namespace agenthost::plugins
