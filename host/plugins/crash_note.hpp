// Which in-process plugin slot a thread is running, so a fatal signal in plugin code can be named
// before the process dies (an in-process plugin shares the host's fate; isolation = "process"
// is the cure, and the last line on the terminal should say so).
#pragma once

#include <string_view>

namespace agenthost::plugins {

// While it lives, this thread is inside `plugin`'s `what` (a tool name or a slot such as
// "list_tools"). Nests: the previous note comes back on destruction. No allocation.
class CrashNote {
public:
    CrashNote(std::string_view plugin, std::string_view what);
    ~CrashNote();
    CrashNote(const CrashNote&) = delete;
    CrashNote& operator=(const CrashNote&) = delete;

    // While it lives, no note is shown: host code called back from inside a plugin slot.
    class Lifted {
    public:
        Lifted();
        ~Lifted();
        Lifted(const Lifted&) = delete;
        Lifted& operator=(const Lifted&) = delete;

    private:
        const char* previous_;
    };

private:
    const char* previous_;
};

// Installs handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT that write the current note
// ("agenthost: plugin 'x' crashed the host (signal 11) while running 'y'; …") to stderr with
// write(2), then die of the same signal as before. Call once, early, outside sanitizer builds
// (their own handlers report more).
void install_crash_note_handlers();

}  // namespace agenthost::plugins
