// HTML → readable text with gumbo (a real HTML5 parser): scripts, styles, navigation and other
// chrome dropped; headings, paragraphs, lists, code and links kept, as Markdown or as plain text.
#pragma once

#include <string>

namespace fetch {

struct Page {
    std::string title;
    std::string text;
};

// `base_url` resolves relative links; `markdown` false gives plain text (links as "text (url)").
Page html_to_text(const std::string& html, const std::string& base_url, bool markdown);

}  // namespace fetch
