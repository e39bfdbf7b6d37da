//! example_rust — an agenthost tool plugin in Rust, std only.
//!
//! Tools:  rust_echo(text: string)        returns its text unchanged
//!         rust_add(a: number, b: number)  returns a + b
//! (Named apart from the C example's echo/add: a tool name is unique across all loaded plugins.)
//!
//! What a Rust author deals with, all in this file:
//!   - one exported `extern "C"` entry point, `ah_plugin_init_v1`, returning a static descriptor;
//!   - hand-written `#[repr(C)]` bindings (src/abi.rs), checked against the C compiler's layout by
//!     the tests at the end of this file;
//!   - `guard()` around the body of EVERY `extern "C"` function: a panic must never unwind into the
//!     host (undefined behaviour before Rust 1.81, an abort of the whole host since), so it is
//!     caught and turned into AH_ERR_INTERNAL, which the host reports as a plugin failure;
//!   - borrowed inputs (AhStr, valid during the call only: copied into owned Strings at once) and
//!     outputs written to the receiver's AhWriter (Rust never frees host memory, nor the reverse).

mod abi;
mod json;

use abi::*;
use std::os::raw::c_char;
use std::panic::{self, AssertUnwindSafe};

/// The plugin's state behind the opaque `ah_instance` pointer: a `Box<Instance>` made in create()
/// and dropped in destroy().
struct Instance {
    api: AhHostApi, // a copy of the host's table (ABI rule 1); its slots stay valid until destroy
    host: *mut AhHost,
}

impl Instance {
    fn log(&self, level: i32, message: &str) {
        if let Some(log) = self.api.log {
            unsafe { log(self.host, level, AhStr::from_str(message), AhStr::from_str("")) }
        }
    }
}

/// Runs `body`, catching any panic: the status it returns, or AH_ERR_INTERNAL after a panic.
/// (The default panic hook still prints the panic message on stderr, which helps the author.)
fn guard<F: FnOnce() -> AhStatus>(body: F) -> AhStatus {
    // AssertUnwindSafe: after a panic nothing the closure touched is used again by this call.
    panic::catch_unwind(AssertUnwindSafe(body)).unwrap_or(AH_ERR_INTERNAL)
}

/// Writes `text` to a writer the host owns.
fn write_all(out: *const AhWriter, text: &str) -> AhStatus {
    if out.is_null() {
        return AH_ERR_INVALID_ARGUMENT;
    }
    let out = unsafe { &*out };
    match out.write {
        Some(write) => unsafe { write(out.ctx, text.as_ptr() as *const c_char, text.len()) },
        None => AH_ERR_INVALID_ARGUMENT,
    }
}

/// A tool result (see THE TOOL RESULT in agenthost.h): {"content": "...", "is_error": ...}.
fn text_result(content: &str) -> String {
    let mut out = String::from("{\"content\":");
    json::write_string(&mut out, content);
    out.push_str(",\"is_error\":false}");
    out
}

/// A tool that ran and failed: status AH_OK, and this result for the model to read.
fn error_result(code: &str, message: &str) -> String {
    let mut out = String::from("{\"content\":");
    json::write_string(&mut out, message);
    out.push_str(",\"is_error\":true,\"error_code\":");
    json::write_string(&mut out, code);
    out.push('}');
    out
}

// ---- the tools ------------------------------------------------------------------------------

fn run_tool(name: &str, arguments: &str) -> String {
    let args = match json::parse(arguments) {
        Ok(v) => v,
        Err(e) => return error_result("invalid_arguments", &format!("the arguments are not JSON: {}", e)),
    };
    match name {
        "rust_echo" => match args.get("text").and_then(json::Value::as_str) {
            Some(text) => text_result(text),
            None => error_result("invalid_arguments", "rust_echo needs a string argument 'text'"),
        },
        "rust_add" => match (args.get("a").and_then(json::Value::as_f64), args.get("b").and_then(json::Value::as_f64)) {
            (Some(a), Some(b)) if (a + b).is_finite() => {
                let sum = a + b;
                // Display prints 5 for 5.0 and the shortest exact form otherwise: valid JSON.
                let mut out = String::from("{\"content\":");
                json::write_string(&mut out, &sum.to_string());
                out.push_str(&format!(",\"is_error\":false,\"structured\":{{\"sum\":{}}}}}", sum));
                out
            }
            (Some(_), Some(_)) => error_result("out_of_range", "the sum does not fit a double"),
            _ => error_result("invalid_arguments", "rust_add needs two numbers 'a' and 'b'"),
        },
        _ => error_result("unknown_tool", "example_rust has no such tool"),
    }
}

// ---- the entry points (every one inside guard) ------------------------------------------------

unsafe extern "C" fn create(
    api: *const AhHostApi,
    host: *mut AhHost,
    out_instance: *mut *mut AhInstance,
    error: *const AhWriter,
) -> AhStatus {
    guard(|| {
        if api.is_null() || out_instance.is_null() {
            write_all(error, "example_rust: create() was given NULL");
            return AH_ERR_INVALID_ARGUMENT;
        }
        let instance = Box::new(Instance { api: read_sized(api), host });
        instance.log(AH_LOG_DEBUG, "example_rust plugin created");
        *out_instance = Box::into_raw(instance) as *mut AhInstance;
        AH_OK
    })
}

unsafe extern "C" fn destroy(instance: *mut AhInstance) {
    guard(|| {
        if !instance.is_null() {
            drop(Box::from_raw(instance as *mut Instance));
        }
        AH_OK
    });
}

unsafe extern "C" fn list_tools(_instance: *mut AhInstance, tools: *const AhToolSink) -> AhStatus {
    guard(|| {
        if tools.is_null() {
            return AH_ERR_INVALID_ARGUMENT;
        }
        let sink = read_sized(tools);
        let add = match sink.add {
            Some(add) => add,
            None => return AH_ERR_INVALID_ARGUMENT,
        };
        let defs: [(&str, &str, &str); 2] = [
            (
                "rust_echo",
                "Returns the given text unchanged (from the Rust example plugin).",
                r#"{"type":"object","properties":{"text":{"type":"string","description":"The text to return"}},"required":["text"],"additionalProperties":false}"#,
            ),
            (
                "rust_add",
                "Adds two numbers and returns the sum (from the Rust example plugin).",
                r#"{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}"#,
            ),
        ];
        for (name, description, schema) in defs {
            // The strings are borrowed by the host only for the duration of add().
            let def = AhToolDef {
                struct_size: std::mem::size_of::<AhToolDef>(),
                name: AhStr::from_str(name),
                description: AhStr::from_str(description),
                input_schema_json: AhStr::from_str(schema),
                hints: AH_TOOL_READ_ONLY | AH_TOOL_IDEMPOTENT,
            };
            let status = add(sink.ctx, &def);
            if status != AH_OK {
                return status;
            }
        }
        AH_OK
    })
}

unsafe extern "C" fn call_tool(_instance: *mut AhInstance, call: *const AhCall, result: *const AhWriter) -> AhStatus {
    guard(|| {
        if call.is_null() {
            return AH_ERR_INVALID_ARGUMENT;
        }
        let call = read_sized(call);
        // Borrowed for this call only: copied into owned strings before anything else happens.
        let name = String::from_utf8_lossy(call.tool_name.as_bytes()).into_owned();
        let arguments = match std::str::from_utf8(call.arguments_json.as_bytes()) {
            Ok(text) => text.to_owned(),
            Err(_) => return write_all(result, &error_result("invalid_arguments", "the arguments are not UTF-8")),
        };
        write_all(result, &run_tool(&name, &arguments))
    })
}

/// `ah_plugin` holds raw pointers, which are not `Sync`; this one only points at static strings
/// and functions and is never written, so sharing it between threads is sound.
struct Descriptor(AhPlugin);
unsafe impl Sync for Descriptor {}

static DESCRIPTOR: Descriptor = Descriptor(AhPlugin {
    struct_size: std::mem::size_of::<AhPlugin>(),
    abi_major: AH_ABI_MAJOR,
    abi_minor: AH_ABI_MINOR,
    kind: AH_PLUGIN_KIND_TOOL,
    flags: AH_PLUGIN_THREAD_SAFE, // no shared mutable state
    name: b"example_rust\0".as_ptr() as *const c_char,
    version: b"1.0.0\0".as_ptr() as *const c_char,
    create: Some(create),
    destroy: Some(destroy),
    list_tools: Some(list_tools),
    call_tool: Some(call_tool),
    context: None,
    chat: None,
    list_models: None,
    list_resources: None,
    read_resource: None,
});

/// The one exported symbol. It only hands back the static descriptor; work starts in create().
#[no_mangle]
pub unsafe extern "C" fn ah_plugin_init_v1(out_plugin: *mut *const AhPlugin) -> AhStatus {
    guard(|| {
        if out_plugin.is_null() {
            return AH_ERR_INVALID_ARGUMENT;
        }
        *out_plugin = &DESCRIPTOR.0;
        AH_OK
    })
}

#[cfg(test)]
mod tests;
