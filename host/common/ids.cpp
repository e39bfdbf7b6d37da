#include "common/ids.hpp"

#include <fstream>
#include <random>

namespace agenthost {

std::string random_hex(size_t bytes) {
    std::string out;
    std::ifstream urandom("/dev/urandom", std::ios::binary);
    std::random_device fallback;
    for (size_t i = 0; i < bytes; ++i) {
        int c = urandom ? urandom.get() : -1;
        unsigned byte = c >= 0 ? static_cast<unsigned>(c) : fallback() & 0xff;
        out += "0123456789abcdef"[byte >> 4];
        out += "0123456789abcdef"[byte & 15];
    }
    return out;
}

std::string new_conversation_id() { return "c-" + random_hex(8); }

}  // namespace agenthost
