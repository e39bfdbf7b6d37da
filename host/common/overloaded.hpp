// Lambdas joined into one visitor for std::visit: std::visit(Overloaded{[](const A&) {…},
// [](const B&) {…}}, v). Without a catch-all `auto` lambda, a kind no lambda takes fails to compile.
#pragma once

namespace agenthost {

template <class... Fs>
struct Overloaded : Fs... {
    using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace agenthost
