// The fetch plugin's URL parser and address guard on arbitrary text: never crashes; what parses is
// http(s) with a host and a port in range; a redirect resolved against it parses again.
#include "url_guard.hpp"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    std::string error, why;
    auto url = fetch::parse_url(text, error);
    if (url) {
        if ((url->scheme != "http" && url->scheme != "https") || url->host.empty() || url->port < 1 || url->port > 65535)
            std::abort();
        if (url->path.empty() || url->path[0] != '/') std::abort();
        std::string again_error;
        if (!fetch::parse_url(url->text(), again_error)) std::abort();  // what we print, we can read back
        if (auto next = fetch::resolve_reference(*url, text.substr(0, text.size() / 2), error)) {
            if (next->scheme != "http" && next->scheme != "https") std::abort();
        }
    } else if (error.empty()) {
        std::abort();
    }
    (void)fetch::blocked_address(text, why);
    return 0;
}
