// Fuzzy names: two names are the same concept when their normal forms match closely — case,
// accents, punctuation, word order, a leading "the" and small typos do not count.
#pragma once

#include <string>

namespace graph {

// "The Beatles!" → "beatles"; "Taylor  SWIFT" → "swift taylor" (words sorted).
std::string normal_form(const std::string& name);
// Similarity of two names in [0, 1] (1 = same normal form), from the edit distance.
double similarity(const std::string& a, const std::string& b);
// The same for names already in normal form (the fast path for bulk comparisons).
double similarity_of_normal(const std::string& a, const std::string& b);
// "close_friends_with" → "Close Friends With".
std::string title_case(const std::string& name);

}  // namespace graph
