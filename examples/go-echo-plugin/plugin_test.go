package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEchoReturnsTheTextUnchanged(t *testing.T) {
	got := runTool("go_echo", []byte(`{"text":"quote \" tab \t ünï 🙂"}`))
	if got.IsError || got.Content != "quote \" tab \t ünï 🙂" {
		t.Fatalf("go_echo: %+v", got)
	}
}

func TestAddSumsAndRefusesWhatIsNotANumber(t *testing.T) {
	if got := runTool("go_add", []byte(`{"a":2,"b":3.5}`)); got.IsError || got.Content != "5.5" || got.Structured["sum"] != 5.5 {
		t.Fatalf("go_add: %+v", got)
	}
	if got := runTool("go_add", []byte(`{"a":"2","b":3}`)); !got.IsError || got.ErrorCode != "invalid_arguments" {
		t.Fatalf("go_add with a string: %+v", got)
	}
	if got := runTool("go_add", []byte(`{"a":1e308,"b":1e308}`)); !got.IsError || got.ErrorCode != "out_of_range" {
		t.Fatalf("go_add past a double: %+v", got)
	}
}

func TestAPanickingToolIsAFailedCall(t *testing.T) {
	tools = append(tools, tool{"go_boom", "", `{"type":"object"}`, func([]byte) result { panic("boom") }})
	defer func() { tools = tools[:len(tools)-1] }()
	got := runTool("go_boom", nil)
	if !got.IsError || got.ErrorCode != "plugin_panic" || !strings.Contains(got.Content, "boom") {
		t.Fatalf("a panic: %+v", got)
	}
}

func TestTheResultIsTheObjectTheHostReads(t *testing.T) {
	text, _ := json.Marshal(runTool("go_nothing", nil))
	var back map[string]any
	if err := json.Unmarshal(text, &back); err != nil || back["is_error"] != true || back["error_code"] != "unknown_tool" {
		t.Fatalf("unknown tool result: %s", text)
	}
}
