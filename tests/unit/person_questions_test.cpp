// What a plugin asks during a call made for a person: the terminal form, --yes, the [sampling]
// policy and its request to the model, and the server's question slot.
#include "agent/person_channel.hpp"
#include "cli/terminal_form.hpp"
#include "common/cancel.hpp"
#include "config/config.hpp"
#include "llm/sampling.hpp"
#include "server/question_slot.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <deque>
#include <sstream>
#include <thread>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

json question(json properties, json required = json::array()) {
    return {{"message", "Who are you?"},
            {"requestedSchema", {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}}}};
}

json reply_of(const plugins::CallerAnswer& a) {
    REQUIRE(a.status == AH_OK);
    return json::parse(a.text);
}

// Answers the form with `lines`, then ends the input.
plugins::CallerAnswer answer_form(const json& params, std::deque<std::string> lines, std::string* shown = nullptr) {
    std::ostringstream out;
    cli::FormIo io{[&lines]() -> std::optional<std::string> {
                       if (lines.empty()) return std::nullopt;
                       std::string line = lines.front();
                       lines.pop_front();
                       return line;
                   },
                   out};
    auto answer = cli::ask_form("srv__who", params, io);
    if (shown) *shown = out.str();
    return answer;
}

// A model that answers every request with one text and remembers what it was asked.
struct FakeModel : llm::ModelClient {
    std::vector<json> requests;
    std::string provider_asked;
    llm::ChatOutcome chat(std::string_view provider, const plugins::CallInput& call, const llm::ChatCallbacks& cb) override {
        provider_asked = provider;
        requests.push_back(json::parse(call.arguments_json));
        cb.on_event(AH_EVENT_TEXT, "a sampled answer");
        cb.on_event(AH_EVENT_STOP, R"({"reason":"end"})");
        llm::ChatOutcome out;
        out.ok = true;
        return out;
    }
};

json sampling_params() {
    return {{"messages", {{{"role", "user"}, {"content", {{"type", "text"}, {"text", "say hi"}}}}}},
            {"systemPrompt", "be brief"},
            {"maxTokens", 5000}};
}

}  // namespace

TEST_CASE("person questions: the terminal form takes defaults, numbers or labels for choices, and asks again on a wrong value",
          "[unit][questions]") {
    json q = question(
        {{"name", {{"type", "string"}, {"title", "Your name"}}},
         {"age", {{"type", "integer"}, {"default", 30}, {"maximum", 120}}},
         {"colour", {{"type", "string"}, {"enum", {"red", "green"}}, {"enumNames", {"Red", "Green"}}}},
         {"pets", {{"type", "array"}, {"maxItems", 2}, {"items", {{"type", "string"}, {"enum", {"cat", "dog", "fish"}}}}}},
         {"subscribe", {{"type", "boolean"}}}},
        {"name", "colour"});
    std::string shown;
    // Fields come in name order: age, colour, name, pets, subscribe.
    json reply = reply_of(answer_form(q, {"200", "", "purple", "Green", "", "Ada", "1,2,3", "cat, 3", "y"}, &shown));
    CHECK(reply["action"] == "accept");
    CHECK(reply["content"] ==
          json{{"age", 30}, {"colour", "green"}, {"name", "Ada"}, {"pets", {"cat", "fish"}}, {"subscribe", true}});
    CHECK_THAT(shown, Contains("srv__who asks: Who are you?") && Contains("Your name *") && Contains("1 Red, 2 Green") &&
                          Contains("[Enter: 30]") && Contains("at most 120") && Contains("must be answered") &&
                          Contains("not a value of this field") && Contains("separated by commas") && Contains("at most 2"));

    CHECK(reply_of(answer_form(q, {"", "decline"}))["action"] == "decline");
    CHECK(reply_of(answer_form(q, {""}))["action"] == "cancel");                       // input ended
    CHECK(reply_of(answer_form(q, {"x", "x", "x"}))["action"] == "cancel");            // an integer, three times wrong
    CHECK(reply_of(answer_form(q, {"", "1", "Ada", "", ""}))["content"].size() == 3);  // optional fields left out
}

TEST_CASE("person questions: --yes accepts the defaults, and refuses in words when a required field has none",
          "[unit][questions]") {
    json with_defaults = question(
        {{"name", {{"type", "string"}, {"default", "John Doe"}}}, {"verified", {{"type", "boolean"}, {"default", true}}}});
    CHECK(reply_of(cli::accept_defaults(with_defaults))["content"] == json{{"name", "John Doe"}, {"verified", true}});
    auto refused = cli::accept_defaults(question({{"name", {{"type", "string"}}}}, {"name"}));
    CHECK(refused.status == AH_ERR_UNSUPPORTED);
    CHECK_THAT(refused.text, Contains("'name' has no default") && Contains("terminal"));
}

TEST_CASE("person questions: a sampling request becomes one chat request, capped, text only", "[unit][questions]") {
    llm::SamplingTarget target{"local", "m1", 1000, nullptr};
    json params = sampling_params();
    params["messages"].push_back({{"role", "assistant"},
                                  {"content", json::array({{{"type", "text"}, {"text", "hello"}},
                                                           {{"type", "image"}, {"data", "AAAA"}, {"mimeType", "image/png"}}})}});
    auto request = llm::sampling_request(params, target);
    REQUIRE(request);
    json r = json::parse(*request);
    CHECK(r["max_tokens"] == 1000);  // asked 5000, capped by [sampling] max_tokens
    CHECK(r["model"] == "m1");
    CHECK(r["tools"] == json::array());
    CHECK(r["messages"][0] == json{{"role", "system"}, {"content", "be brief"}});
    CHECK(r["messages"][1] == json{{"role", "user"}, {"content", "say hi"}});
    CHECK_THAT(r["messages"][2]["content"].get<std::string>(), Contains("hello") && Contains("[image content"));

    CHECK_FALSE(llm::sampling_request(json{{"messages", json::array()}}, target));
    auto bad_role = llm::sampling_request(json{{"messages", {{{"role", "system"}, {"content", "x"}}}}}, target);
    REQUIRE_FALSE(bad_role);
    CHECK_THAT(bad_role.error().message, Contains("\"user\" or \"assistant\""));
}

TEST_CASE("person questions: the sampling policy decides in one place: deny, ask the person, allow", "[unit][questions]") {
    FakeModel model;
    std::vector<agent::PersonQuestion> asked;
    std::string answer_with = "yes";
    agent::PersonCall call;
    call.tool = "srv__summarise";
    call.call_id = "c/1";
    call.model = &model;
    call.provider = "run-provider";
    call.model_name = "run-model";
    auto ask = [&](const agent::PersonQuestion& q) -> plugins::CallerAnswer {
        asked.push_back(q);
        json content{{"allow", answer_with == "yes"}};
        return {AH_OK, json{{"action", "accept"}, {"content", content}}.dump()};
    };
    auto sample = [](agent::PersonCall c) {
        agent::PersonChannel channel(std::move(c));
        return channel.channel()->ask(plugins::CallerRequest::sample, sampling_params());
    };

    SECTION("deny: never answered, and the words name the setting") {
        call.sampling.policy = config::SamplingPolicy::deny;
        call.ask = ask;
        auto a = sample(call);
        CHECK(a.status == AH_ERR_UNSUPPORTED);
        CHECK_THAT(a.text, Contains("policy = \"deny\""));
        CHECK(model.requests.empty());
        CHECK(asked.empty());
    }
    SECTION("ask, with nobody to ask: refused, naming how to allow it") {
        auto a = sample(call);
        CHECK(a.status == AH_ERR_UNSUPPORTED);
        CHECK_THAT(a.text, Contains("nobody can be asked") && Contains("policy = \"allow\""));
        CHECK(model.requests.empty());
    }
    SECTION("ask: the person says no, then yes") {
        call.ask = ask;
        answer_with = "no";
        auto no = sample(call);
        CHECK(no.status == AH_ERR_FAILED);
        CHECK(model.requests.empty());
        answer_with = "yes";
        json result = reply_of(sample(call));
        CHECK(result["content"]["text"] == "a sampled answer");
        CHECK(result["role"] == "assistant");
        REQUIRE(asked.size() == 2);
        CHECK(asked[1].consent);
        CHECK(asked[1].tool == "srv__summarise");
        CHECK_THAT(asked[1].params["message"].get<std::string>(), Contains("at most 1000 tokens") && Contains("say hi"));
        CHECK(model.provider_asked == "run-provider");
        CHECK(model.requests.at(0)["model"] == "run-model");
    }
    SECTION("allow, with its own provider: nobody is asked") {
        call.sampling.policy = config::SamplingPolicy::allow;
        call.sampling.provider = "cheap";
        call.sampling.max_tokens = 64;
        json result = reply_of(sample(call));
        CHECK(result["content"]["text"] == "a sampled answer");
        CHECK(asked.empty());
        CHECK(model.provider_asked == "cheap");
        CHECK(model.requests.at(0)["model"] == "");  // that provider's own model
        CHECK(model.requests.at(0)["max_tokens"] == 64);
    }
}

TEST_CASE("person questions: elicitation goes to the person, is announced first, and stops once the call has ended",
          "[unit][questions]") {
    std::vector<std::string> log;
    agent::PersonCall call;
    call.tool = "t";
    call.ask = [&](const agent::PersonQuestion& q) -> plugins::CallerAnswer {
        log.push_back("asked " + q.params["message"].get<std::string>());
        return {AH_OK, R"({"action":"decline"})"};
    };
    call.announce = [&](const agent::PersonQuestion&) { log.push_back("announced"); };
    agent::PersonChannel channel(call);
    auto a = channel.channel()->ask(plugins::CallerRequest::elicit, question({}));
    CHECK(reply_of(a)["action"] == "decline");
    CHECK(log == std::vector<std::string>{"announced", "asked Who are you?"});
    channel.close();
    CHECK(channel.channel()->ask(plugins::CallerRequest::elicit, question({})).status == AH_ERR_CANCELLED);
    CHECK(log.size() == 2);

    agent::PersonChannel nobody(agent::PersonCall{});
    auto unsupported = nobody.channel()->ask(plugins::CallerRequest::elicit, question({}));
    CHECK(unsupported.status == AH_ERR_UNSUPPORTED);
    CHECK_THAT(unsupported.text, Contains("nobody can be asked"));
}

TEST_CASE("person questions: the server's slot takes one checked answer, and gives up on a cancel", "[unit][questions]") {
    server::QuestionSlot slot;
    ah_cancel cancel;
    CHECK(slot.answer({{"action", "accept"}, {"content", json::object()}})->code == "no_question");
    agent::PersonQuestion q{"tool", "c/1", question({{"name", {{"type", "string"}}}}, {"name"}), false, nullptr};
    plugins::CallerAnswer got;
    std::thread asker([&] { got = slot.ask(q, cancel, std::chrono::seconds(30)); });
    while (!slot.waiting()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK((*slot.waiting())["message"] == "Who are you?");
    CHECK(slot.answer({{"action", "maybe"}})->code == "invalid_answer");
    auto misfit = slot.answer({{"action", "accept"}, {"content", {{"name", 3}}}});
    REQUIRE(misfit);
    CHECK(misfit->code == "invalid_answer");
    CHECK_THAT(misfit->message, Contains("does not fit"));
    CHECK_FALSE(slot.answer({{"action", "accept"}, {"content", {{"name", "Ada"}}}}));
    asker.join();
    CHECK(reply_of(got)["content"]["name"] == "Ada");
    CHECK_FALSE(slot.waiting());

    std::thread cancelled([&] { got = slot.ask(q, cancel, std::chrono::seconds(30)); });
    while (!slot.waiting()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    cancel.cancel();
    cancelled.join();
    CHECK(got.status == AH_ERR_CANCELLED);
}

TEST_CASE("person questions: the sampling table is read from agenthost.toml, a wrong policy named with its choices",
          "[unit][questions]") {
    auto c = config::parse("[sampling]\npolicy = \"allow\"\nprovider = \"cheap\"\nmax_tokens = 200\n", "agenthost.toml", "/");
    REQUIRE(c);
    CHECK(c->sampling.policy == config::SamplingPolicy::allow);
    CHECK(c->sampling.provider == "cheap");
    CHECK(c->sampling.max_tokens == 200);
    CHECK(config::defaults().sampling.policy == config::SamplingPolicy::ask);
    auto bad = config::parse("[sampling]\npolicy = \"sometimes\"\n", "agenthost.toml", "/");
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message, Contains("sampling.policy") && Contains("allow"));
}
