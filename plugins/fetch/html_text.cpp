#include "html_text.hpp"

#include "url_guard.hpp"

#include <gumbo.h>

#include <cctype>
#include <memory>

namespace fetch {
namespace {

struct GumboDeleter {
    void operator()(GumboOutput* out) const { gumbo_destroy_output(&kGumboDefaultOptions, out); }
};

bool skipped(GumboTag tag) {
    switch (tag) {
        case GUMBO_TAG_SCRIPT:
        case GUMBO_TAG_STYLE:
        case GUMBO_TAG_NOSCRIPT:
        case GUMBO_TAG_NAV:
        case GUMBO_TAG_HEADER:
        case GUMBO_TAG_FOOTER:
        case GUMBO_TAG_ASIDE:
        case GUMBO_TAG_FORM:
        case GUMBO_TAG_SVG:
        case GUMBO_TAG_IFRAME:
        case GUMBO_TAG_TEMPLATE:
        case GUMBO_TAG_HEAD:
        case GUMBO_TAG_BUTTON:
        case GUMBO_TAG_SELECT:
        case GUMBO_TAG_CANVAS: return true;
        default: return false;
    }
}

bool block(GumboTag tag) {
    switch (tag) {
        case GUMBO_TAG_P:
        case GUMBO_TAG_DIV:
        case GUMBO_TAG_SECTION:
        case GUMBO_TAG_ARTICLE:
        case GUMBO_TAG_MAIN:
        case GUMBO_TAG_UL:
        case GUMBO_TAG_OL:
        case GUMBO_TAG_TABLE:
        case GUMBO_TAG_TR:
        case GUMBO_TAG_BLOCKQUOTE:
        case GUMBO_TAG_DL:
        case GUMBO_TAG_FIGURE:
        case GUMBO_TAG_HR:
        case GUMBO_TAG_BODY: return true;
        default: return false;
    }
}

int heading(GumboTag tag) {
    switch (tag) {
        case GUMBO_TAG_H1: return 1;
        case GUMBO_TAG_H2: return 2;
        case GUMBO_TAG_H3: return 3;
        case GUMBO_TAG_H4: return 4;
        case GUMBO_TAG_H5: return 5;
        case GUMBO_TAG_H6: return 6;
        default: return 0;
    }
}

class Writer {
public:
    Writer(std::string base, bool markdown) : base_(std::move(base)), markdown_(markdown) {}

    std::string title;

    void walk(const GumboNode* node) {
        if (node->type == GUMBO_NODE_TEXT || node->type == GUMBO_NODE_WHITESPACE || node->type == GUMBO_NODE_CDATA) {
            text(node->v.text.text);
            return;
        }
        if (node->type != GUMBO_NODE_ELEMENT && node->type != GUMBO_NODE_DOCUMENT) return;
        const GumboVector* children = node->type == GUMBO_NODE_DOCUMENT ? &node->v.document.children : &node->v.element.children;
        if (node->type == GUMBO_NODE_DOCUMENT) {
            for (unsigned i = 0; i < children->length; ++i) walk(static_cast<const GumboNode*>(children->data[i]));
            return;
        }
        GumboTag tag = node->v.element.tag;
        if (tag == GUMBO_TAG_TITLE) {
            title = inner_text(node);
            return;
        }
        if (tag == GUMBO_TAG_HEAD) {  // only its title matters
            for (unsigned i = 0; i < children->length; ++i) {
                auto* child = static_cast<const GumboNode*>(children->data[i]);
                if (child->type == GUMBO_NODE_ELEMENT && child->v.element.tag == GUMBO_TAG_TITLE) title = inner_text(child);
            }
            return;
        }
        if (skipped(tag)) return;
        if (tag == GUMBO_TAG_BR) return newline();
        if (tag == GUMBO_TAG_PRE) {
            paragraph();
            raw(markdown_ ? "```\n" + inner_text(node) + "\n```" : inner_text(node));
            paragraph();
            return;
        }
        if (int level = heading(tag)) {
            paragraph();
            if (markdown_) raw(std::string(level, '#') + " ");
            children_of(node);
            paragraph();
            return;
        }
        if (tag == GUMBO_TAG_LI) {
            newline();
            raw(ordered_ ? std::to_string(++item_) + ". " : "- ");
            children_of(node);
            newline();
            return;
        }
        if (tag == GUMBO_TAG_OL || tag == GUMBO_TAG_UL) {
            bool was = ordered_;
            int count = item_;
            ordered_ = tag == GUMBO_TAG_OL;
            item_ = 0;
            paragraph();
            children_of(node);
            paragraph();
            ordered_ = was;
            item_ = count;
            return;
        }
        if (tag == GUMBO_TAG_A) return link(node);
        if (tag == GUMBO_TAG_IMG) {
            const GumboAttribute* alt = gumbo_get_attribute(&node->v.element.attributes, "alt");
            if (alt && *alt->value) text(std::string("[image: ") + alt->value + "]");
            return;
        }
        if (markdown_ && (tag == GUMBO_TAG_STRONG || tag == GUMBO_TAG_B || tag == GUMBO_TAG_EM || tag == GUMBO_TAG_I ||
                          tag == GUMBO_TAG_CODE)) {
            const char* mark = tag == GUMBO_TAG_CODE ? "`" : (tag == GUMBO_TAG_EM || tag == GUMBO_TAG_I) ? "*" : "**";
            std::string inner = collapse(inner_text(node));
            if (!inner.empty()) text(mark + inner + mark);
            return;
        }
        bool is_block = block(tag);
        if (is_block) paragraph();
        if (tag == GUMBO_TAG_TD || tag == GUMBO_TAG_TH) raw(" | ");
        children_of(node);
        if (is_block) paragraph();
    }

    std::string result() {
        // Trim and squeeze blank lines to one.
        std::string out;
        int blank = 0;
        size_t start = 0;
        while (start < out_.size()) {
            size_t end = out_.find('\n', start);
            std::string line = out_.substr(start, end == std::string::npos ? std::string::npos : end - start);
            while (!line.empty() && line.back() == ' ') line.pop_back();
            if (line.empty()) {
                if (++blank == 1 && !out.empty()) out += "\n";
            } else {
                blank = 0;
                out += line + "\n";
            }
            if (end == std::string::npos) break;
            start = end + 1;
        }
        while (!out.empty() && out.back() == '\n') out.pop_back();
        return out;
    }

private:
    static std::string collapse(const std::string& s) {
        std::string out;
        bool space = false;
        for (unsigned char c : s) {
            if (std::isspace(c)) {
                space = !out.empty();
            } else {
                if (space) out += ' ';
                space = false;
                out += static_cast<char>(c);
            }
        }
        return out;
    }

    static std::string inner_text(const GumboNode* node) {
        if (node->type == GUMBO_NODE_TEXT || node->type == GUMBO_NODE_WHITESPACE || node->type == GUMBO_NODE_CDATA)
            return node->v.text.text;
        if (node->type != GUMBO_NODE_ELEMENT) return "";
        std::string out;
        const GumboVector& children = node->v.element.children;
        for (unsigned i = 0; i < children.length; ++i) out += inner_text(static_cast<const GumboNode*>(children.data[i]));
        return out;
    }

    void children_of(const GumboNode* node) {
        const GumboVector& children = node->v.element.children;
        for (unsigned i = 0; i < children.length; ++i) walk(static_cast<const GumboNode*>(children.data[i]));
    }

    void link(const GumboNode* node) {
        std::string label = collapse(inner_text(node));
        const GumboAttribute* href = gumbo_get_attribute(&node->v.element.attributes, "href");
        std::string target = href ? href->value : "";
        if (!target.empty() && target.rfind("javascript:", 0) != 0 && target[0] != '#') {
            std::string error;
            if (auto base = parse_url(base_, error))
                if (auto resolved = resolve_reference(*base, target, error)) target = resolved->text();
        } else {
            target.clear();
        }
        if (label.empty()) label = target;
        if (target.empty()) return text(label);
        text(markdown_ ? "[" + label + "](" + target + ")" : label + " (" + target + ")");
    }

    void text(const std::string& s) {
        std::string c = collapse(s);
        bool leading = !s.empty() && std::isspace(static_cast<unsigned char>(s.front()));
        bool trailing = !s.empty() && std::isspace(static_cast<unsigned char>(s.back()));
        if (c.empty()) {
            if (leading) pending_space_ = true;
            return;
        }
        if ((leading || pending_space_) && !out_.empty() && out_.back() != '\n' && out_.back() != ' ') out_ += ' ';
        out_ += c;
        pending_space_ = trailing;
    }

    void raw(const std::string& s) {
        out_ += s;
        pending_space_ = false;
    }
    void newline() {
        if (!out_.empty() && out_.back() != '\n') out_ += '\n';
        pending_space_ = false;
    }
    void paragraph() {
        newline();
        if (!out_.empty() && (out_.size() < 2 || out_[out_.size() - 2] != '\n')) out_ += '\n';
    }

    std::string base_;
    bool markdown_;
    std::string out_;
    bool pending_space_ = false;
    bool ordered_ = false;
    int item_ = 0;
};

}  // namespace

Page html_to_text(const std::string& html, const std::string& base_url, bool markdown) {
    std::unique_ptr<GumboOutput, GumboDeleter> parsed(gumbo_parse_with_options(&kGumboDefaultOptions, html.data(), html.size()));
    Writer writer(base_url, markdown);
    writer.walk(parsed->document);
    return {writer.title, writer.result()};
}

}  // namespace fetch
