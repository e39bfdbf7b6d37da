// Fuzzy names: two names are the same concept when their normal forms match closely — case,
// accents, punctuation, word order, a leading "the" and small typos do not count — and they name
// the same numbers (digits and roman numerals: Apollo 11 is not Apollo 13, Henry VIII not Henry VII).
#pragma once

#include <string>

namespace graph {

// "The Beatles!" → "beatles"; "Taylor  SWIFT" → "swift taylor" (words sorted); "Rocky II" →
// "2 rocky" (roman numerals and leading zeros to plain digits).
std::string normal_form(const std::string& name);
// A name as a person means it exactly: case and accents folded and spaces collapsed, nothing else
// ("Café  Society" → "cafe society"; "The Graph" stays "the graph", not "graph").
std::string exact_form(const std::string& name);
// Similarity of two names in [0, 1] (1 = same normal form), from the edit distance; 0 when they
// name different numbers.
double similarity(const std::string& a, const std::string& b);
// The same for names already in normal form (the fast path for bulk comparisons).
double similarity_of_normal(const std::string& a, const std::string& b);
// "close_friends_with" and "closeFriendsWith" → "Close Friends With".
std::string title_case(const std::string& name);

}  // namespace graph
