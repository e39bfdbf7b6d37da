// The words for an ah_status in messages people read: a bare number means nothing to a user.
#pragma once

#include <agenthost/agenthost.h>

#include <string>

namespace agenthost::plugins {

// "an invalid argument (AH_ERR_INVALID_ARGUMENT)"; an unknown value is named with its number.
inline std::string status_words(int status) {
    struct Entry {
        int status;
        const char* words;
    };
    static constexpr Entry kWords[] = {
        {AH_OK, "success (AH_OK)"},
        {AH_ERR_FAILED, "a failure (AH_ERR_FAILED)"},
        {AH_ERR_INVALID_ARGUMENT, "an invalid argument (AH_ERR_INVALID_ARGUMENT)"},
        {AH_ERR_NOT_FOUND, "not found (AH_ERR_NOT_FOUND)"},
        {AH_ERR_UNSUPPORTED, "unsupported (AH_ERR_UNSUPPORTED)"},
        {AH_ERR_CANCELLED, "cancelled (AH_ERR_CANCELLED)"},
        {AH_ERR_NO_MEMORY, "out of memory (AH_ERR_NO_MEMORY)"},
        {AH_ERR_IO, "an I/O error (AH_ERR_IO)"},
        {AH_ERR_TIMEOUT, "a timeout (AH_ERR_TIMEOUT)"},
        {AH_ERR_INTERNAL, "an internal error (AH_ERR_INTERNAL)"},
    };
    for (const Entry& e : kWords)
        if (e.status == status) return e.words;
    return "an unknown status " + std::to_string(status);
}

}  // namespace agenthost::plugins
