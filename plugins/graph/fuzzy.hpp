// Fuzzy names: two names are the same concept when their normal forms match closely — case,
// accents, punctuation, word order, a leading "the" and small typos do not count — and they name
// the same numbers (digits and roman numerals: Apollo 11 is not Apollo 13, Henry VIII not Henry VII).
#pragma once

#include <optional>
#include <string>

namespace graph {

// "The Beatles!" → "beatles"; "Taylor  SWIFT" → "swift taylor" (words sorted); "Rocky II" →
// "2 rocky" (roman numerals and leading zeros to plain digits).
std::string normal_form(const std::string& name);
// A name as a person means it exactly: case and accents folded and spaces collapsed, nothing else
// ("Café  Society" → "cafe society"; "The Graph" stays "the graph", not "graph").
std::string exact_form(const std::string& name);
// A name with its punctuation and spaces gone ("AC/DC" → "acdc", "J. R. R. Tolkien" →
// "jrrtolkien", "Spider-Man" → "spiderman"): two names alike in it differ only in how they are written.
std::string compact_form(const std::string& name);
// Similarity of two names in [0, 1] (1 = same normal form or same compact form), from the edit
// distance; 0 when they name different numbers.
double similarity(const std::string& a, const std::string& b);
// The same for names already in normal form (the fast path for bulk comparisons).
double similarity_of_normal(const std::string& a, const std::string& b);
// Why two close names (of the given types, "" when unknown) still name different things, in words
// for the model; nullopt when nothing keeps them apart. Different types ("Mercury" the Planet and
// the Element; person-like types count as one), and people whose given names differ ("Jon Snow"
// and "John Snow": same surname, another first word, at least one of them typed as a person).
std::optional<std::string> kept_apart(const std::string& name_a, const std::string& type_a, const std::string& name_b,
                                      const std::string& type_b);
// The one dedup decision: close enough at `threshold` and nothing keeps them apart.
bool same_concept(const std::string& name_a, const std::string& type_a, const std::string& name_b, const std::string& type_b,
                  double threshold);

// "close_friends_with" and "closeFriendsWith" → "Close Friends With".
std::string title_case(const std::string& name);

}  // namespace graph
