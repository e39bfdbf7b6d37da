#include "plugins/crash_note.hpp"

#include <algorithm>
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

// Only async-signal-safe calls here: write(2), strlen, and digits formatted by hand.
void on_fatal_signal(int sig) {
    if (const char* note = current_note) {
        char head[48] = "\nagenthost: signal ";
        size_t n = std::strlen(head);
        char digits[12];
        size_t d = 0;
        for (int v = sig; v > 0 && d < sizeof digits; v /= 10) digits[d++] = static_cast<char>('0' + v % 10);
        while (d > 0) head[n++] = digits[--d];
        head[n++] = ':';
        head[n++] = ' ';
        (void)!::write(STDERR_FILENO, head, n);
        (void)!::write(STDERR_FILENO, note, std::strlen(note));
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
}

CrashNote::~CrashNote() {
    current_note = previous_;
    --note_depth;
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
