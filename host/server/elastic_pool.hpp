// The HTTP server's task queue: one thread per connection being served, started on demand up to
// `max_threads`, idle ones ending after a while (down to `min_threads`). cpp-httplib's fixed pool
// queues a new connection behind busy ones, so a few hundred slow sockets (slowloris), waiting
// requests or open event streams kept /health from being answered; here a new connection gets a
// thread at once while fewer than `max_threads` are busy.
#pragma once

#include "server/worker_pool.hpp"

#include <httplib.h>

namespace agenthost::server {

class ElasticPool : public httplib::TaskQueue {
public:
    ElasticPool(size_t min_threads, size_t max_threads) : pool_(min_threads, max_threads) {}
    void enqueue(std::function<void()> fn) override { (void)pool_.enqueue(std::move(fn)); }  // refused only while stopping
    void shutdown() override { pool_.shutdown(); }
    size_t threads() { return pool_.threads(); }

private:
    WorkerPool pool_;
};

}  // namespace agenthost::server
