// example_go: an agenthost tool plugin in Go, built with cgo as a C shared library
// (go build -buildmode=c-shared). Tools: go_echo (returns its text) and go_add (adds two numbers).
//
// glue.c holds what must be C: the descriptor, the entry point and the calls through the host's
// function pointers. Go gets the host's structs already copied (ABI rule 1) and answers with the
// tool result JSON (agenthost.h, THE TOOL RESULT), written through the host's writer.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../sdk/include
#include <agenthost/agenthost.h>
#include <stdlib.h>

ah_status example_go_add_tool(const ah_tool_sink *sink, const char *name, const char *description, const char *schema,
                              uint32_t hints);
ah_status example_go_write(const ah_writer *out, const char *data, size_t len);
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"math"
	"unsafe"
)

type tool struct {
	name, description, schema string
	run                       func(arguments []byte) result
}

// The tool result object the host reads.
type result struct {
	Content    string         `json:"content"`
	IsError    bool           `json:"is_error"`
	ErrorCode  string         `json:"error_code,omitempty"`
	Structured map[string]any `json:"structured,omitempty"`
}

func failure(code, message string) result {
	return result{Content: message, IsError: true, ErrorCode: code}
}

var tools = []tool{
	{"go_echo", "Returns the given text unchanged.",
		`{"type":"object","properties":{"text":{"type":"string","description":"The text to return"}},"required":["text"],"additionalProperties":false}`,
		echo},
	{"go_add", "Adds two numbers and returns the sum.",
		`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`,
		add},
}

func echo(arguments []byte) result {
	var args struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(arguments, &args); err != nil || args.Text == nil {
		return failure("invalid_arguments", "go_echo needs a string argument 'text'")
	}
	return result{Content: *args.Text}
}

func add(arguments []byte) result {
	var args struct {
		A, B *float64
	}
	if err := json.Unmarshal(arguments, &args); err != nil || args.A == nil || args.B == nil {
		return failure("invalid_arguments", "go_add needs two numbers 'a' and 'b'")
	}
	sum := *args.A + *args.B
	if math.IsInf(sum, 0) {
		return failure("out_of_range", "the sum does not fit a double")
	}
	// The text for the model, and the exact value for programs (MCP structuredContent).
	return result{Content: fmt.Sprintf("%g", sum), Structured: map[string]any{"sum": sum}}
}

// goString copies an ah_str: the host's bytes are borrowed for the call only.
func goString(s C.ah_str) []byte {
	if s.data == nil || s.len == 0 {
		return nil
	}
	return C.GoBytes(unsafe.Pointer(s.data), C.int(s.len))
}

func write(out *C.ah_writer, text []byte) C.ah_status {
	if len(text) == 0 {
		return C.AH_OK
	}
	return C.example_go_write(out, (*C.char)(unsafe.Pointer(&text[0])), C.size_t(len(text)))
}

//export goListTools
func goListTools(sink *C.ah_tool_sink) (status C.ah_status) {
	defer func() { // a panic must never cross into C: it would end the host
		if recover() != nil {
			status = C.AH_ERR_FAILED
		}
	}()
	for _, t := range tools {
		name, description, schema := C.CString(t.name), C.CString(t.description), C.CString(t.schema)
		// A refused tool does not stop the others (agenthost.h, ah_tool_sink.add).
		C.example_go_add_tool(sink, name, description, schema, C.AH_TOOL_READ_ONLY|C.AH_TOOL_IDEMPOTENT)
		C.free(unsafe.Pointer(name))
		C.free(unsafe.Pointer(description))
		C.free(unsafe.Pointer(schema))
	}
	return C.AH_OK
}

// runTool runs the named tool. A panic in it becomes a failed call, reported as a result: it must
// never cross into C, where it would end the host. (A goroutine a tool starts needs its own recover:
// a panic there ends the process whatever this function does.)
func runTool(name string, arguments []byte) (outcome result) {
	defer func() {
		if p := recover(); p != nil {
			outcome = failure("plugin_panic", fmt.Sprint("the tool panicked: ", p))
		}
	}()
	for _, t := range tools {
		if t.name == name {
			return t.run(arguments)
		}
	}
	return failure("unknown_tool", "example_go has no tool named "+name)
}

//export goCallTool
func goCallTool(call *C.ah_call, out *C.ah_writer) C.ah_status {
	text, err := json.Marshal(runTool(string(goString(call.tool_name)), goString(call.arguments_json)))
	if err != nil {
		text, _ = json.Marshal(failure("internal", err.Error()))
	}
	return write(out, text)
}

func main() {} // required by -buildmode=c-shared, never run
