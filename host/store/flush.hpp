// When a committed write must be on disk. Only a store whose durability is "full" syncs at all
// ("process" durability never waits for the disk), so `with_next` matters only there.
#pragma once

namespace agenthost::store {

enum class Flush {
    now,              // on disk before the write returns: it survives a power cut
    with_next,        // survives a killed process at once, and a power cut once a later write is flushed
                      // (syncing the log syncs everything before it): for a write whose loss the run can redo
    with_next_write,  // held in memory and written in the transaction of the store's next write,
                      // so it is kept or lost together with that write (a provider's state, kept
                      // with the step that used its reply); a store that cannot hold it treats it
                      // as with_next
};

}  // namespace agenthost::store
