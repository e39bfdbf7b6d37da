//! Tests: the bindings' layout against the C compiler's, the panic guard, and the plugin driven
//! through its exported entry point the way the host drives it.
//!
//! The layout table is the output of sdk/abi/abi_layout.c: the file named by $AH_ABI_LAYOUT (the
//! test suite passes a fresh one, compiled from the header), else the committed
//! docs/abi-layout.md (x86_64 Linux).

use super::*;
use std::collections::HashMap;
use std::os::raw::c_void;

/// offset_of!(Type, field) for Rust 1.63 (core::mem::offset_of! is 1.77): the field's address
/// minus the struct's, on an uninitialised value, without creating a reference to it.
macro_rules! offset_of {
    ($t:ty, $f:ident) => {{
        let value = std::mem::MaybeUninit::<$t>::uninit();
        let base = value.as_ptr();
        #[allow(unused_unsafe)]
        let field = unsafe { std::ptr::addr_of!((*base).$f) };
        field as usize - base as usize
    }};
}

/// The size of a field's type, from a pointer to the field.
fn size_of_pointee<T>(_: *const T) -> usize {
    std::mem::size_of::<T>()
}

macro_rules! size_of_field {
    ($t:ty, $f:ident) => {{
        let value = std::mem::MaybeUninit::<$t>::uninit();
        let base = value.as_ptr();
        #[allow(unused_unsafe)]
        let field = unsafe { std::ptr::addr_of!((*base).$f) };
        size_of_pointee(field)
    }};
}

/// One member row of the table: offset, size, the minor that appended it.
struct Member {
    name: String,
    offset: usize,
    size: usize,
    since: u32,
}

struct Table {
    version: String,                        // "1.3": the header's ABI version
    sizes: HashMap<String, HashMap<String, usize>>, // struct -> column ("1.0", …, "alignment") -> value
    members: HashMap<String, Vec<Member>>,
}

fn cells(line: &str) -> Vec<String> {
    line.trim().trim_matches('|').split('|').map(|c| c.trim().trim_matches('`').to_string()).collect()
}

fn load_table() -> Table {
    let path = std::env::var("AH_ABI_LAYOUT")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/abi-layout.md").to_string());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read the layout table {}: {}", path, e));
    let version = text
        .split("(ABI ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("{}: no '(ABI x.y)'", path))
        .to_string();
    let mut table = Table { version, sizes: HashMap::new(), members: HashMap::new() };
    let mut section = "";
    let mut columns: Vec<String> = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.starts_with("## Sizes") {
            section = "sizes";
        } else if line.starts_with("## Members") {
            section = "members";
        } else if let Some(name) = line.strip_prefix("### ") {
            current = name.trim_matches('`').to_string();
        } else if line.starts_with('|') && !line.starts_with("|---") {
            let row = cells(line);
            if section == "sizes" && row[0] == "struct" {
                columns = row;
            } else if section == "sizes" {
                let values = columns.iter().zip(row.iter()).skip(1).map(|(c, v)| (c.clone(), v.parse().unwrap())).collect();
                table.sizes.insert(row[0].clone(), values);
            } else if section == "members" && row[0] != "member" {
                let since = row[3].split('.').nth(1).unwrap().parse().unwrap();
                table.members.entry(current.clone()).or_insert_with(Vec::new).push(Member {
                    name: row[0].clone(),
                    offset: row[1].parse().unwrap(),
                    size: row[2].parse().unwrap(),
                    since,
                });
            }
        }
    }
    assert!(!table.members.is_empty(), "{}: no member tables found", path);
    table
}

/// Checks one binding against the table, at the minor the bindings were written for: its size,
/// its alignment, and its members — exactly those of that minor, same order, offsets and sizes.
/// A mistake gives one line per difference.
fn check_struct(table: &Table, c_name: &str, size: usize, align: usize, fields: &[(&str, usize, usize)], errors: &mut Vec<String>) {
    let minor = format!("{}.{}", AH_ABI_MAJOR, AH_ABI_MINOR);
    let sizes = match table.sizes.get(c_name) {
        Some(s) => s,
        None => return errors.push(format!("{}: not in the table", c_name)),
    };
    match sizes.get(&minor) {
        Some(&expected) if expected == size => {}
        Some(&expected) => errors.push(format!("{}: size {} in Rust, {} in C at ABI {}", c_name, size, expected, minor)),
        None => errors.push(format!("{}: the table (ABI {}) has no column for the bindings' ABI {}", c_name, table.version, minor)),
    }
    if sizes.get("alignment") != Some(&align) {
        errors.push(format!("{}: alignment {} in Rust, {:?} in C", c_name, align, sizes.get("alignment")));
    }
    let c_members: Vec<&Member> = table.members[c_name].iter().filter(|m| m.since <= AH_ABI_MINOR).collect();
    let c_names: Vec<&str> = c_members.iter().map(|m| m.name.as_str()).collect();
    let rust_names: Vec<&str> = fields.iter().map(|f| f.0).collect();
    if c_names != rust_names {
        errors.push(format!("{}: members {:?} in Rust, {:?} in C", c_name, rust_names, c_names));
        return;
    }
    for (member, (name, offset, field_size)) in c_members.iter().zip(fields) {
        if member.offset != *offset || member.size != *field_size {
            errors.push(format!(
                "{}.{}: offset {} size {} in Rust, offset {} size {} in C",
                c_name, name, offset, field_size, member.offset, member.size
            ));
        }
    }
}

/// check!(table, errors, "c_name", RustType, [field, …]) — fields named as in C.
macro_rules! check {
    ($table:expr, $errors:expr, $c:literal, $t:ty, [$($f:ident),* $(,)?]) => {
        check_struct(
            $table,
            $c,
            std::mem::size_of::<$t>(),
            std::mem::align_of::<$t>(),
            &[$((stringify!($f), offset_of!($t, $f), size_of_field!($t, $f))),*],
            $errors,
        )
    };
}

#[test]
fn layout_matches_the_c_header() {
    let table = load_table();
    let t = &table;
    let mut errors = Vec::new();
    let e = &mut errors;
    check!(t, e, "ah_str", AhStr, [data, len]);
    check!(t, e, "ah_writer", AhWriter, [struct_size, ctx, write]);
    check!(t, e, "ah_http_request", AhHttpRequest,
           [struct_size, method, url, headers_json, body, timeout_ms, connect_timeout_ms, flags, resolve_to]);
    check!(t, e, "ah_http_sink", AhHttpSink, [struct_size, ctx, on_head, on_body]);
    check!(t, e, "ah_host_api", AhHostApi,
           [struct_size, abi_major, abi_minor, host_version, log, get_config, kv_get, kv_set, kv_delete,
            memory_get, memory_set, post_event, http_request, data_dir, is_cancelled, tools_changed]);
    check!(t, e, "ah_tool_def", AhToolDef, [struct_size, name, description, input_schema_json, hints]);
    check!(t, e, "ah_tool_sink", AhToolSink, [struct_size, ctx, add]);
    check!(t, e, "ah_call", AhCall,
           [struct_size, call_id, tool_name, arguments_json, conversation_id, request_context_json, cancel]);
    check!(t, e, "ah_event_sink", AhEventSink, [struct_size, ctx, emit]);
    check!(t, e, "ah_plugin", AhPlugin,
           [struct_size, abi_major, abi_minor, kind, flags, name, version, create, destroy, list_tools,
            call_tool, context, chat, list_models, list_resources, read_resource]);
    // Every struct of the table is bound (a struct added to the header needs a binding too).
    let mut unbound: Vec<&String> = table.sizes.keys().filter(|name| {
        !["ah_str", "ah_writer", "ah_http_request", "ah_http_sink", "ah_host_api", "ah_tool_def",
          "ah_tool_sink", "ah_call", "ah_event_sink", "ah_plugin"].contains(&name.as_str())
    }).collect();
    unbound.sort();
    if !unbound.is_empty() {
        errors.push(format!("structs of the header without a Rust binding: {:?}", unbound));
    }
    assert!(errors.is_empty(), "the Rust bindings differ from the C header (ABI {}):\n{}", table.version, errors.join("\n"));
}

#[test]
fn manifest_declares_the_bindings_abi() {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/plugin.toml")).unwrap();
    let expected = format!("abi = \"{}.{}\"", AH_ABI_MAJOR, AH_ABI_MINOR);
    assert!(manifest.lines().any(|l| l.trim() == expected), "plugin.toml must say {}", expected);
    assert!(manifest.lines().any(|l| l.trim() == "name = \"example_rust\""));
}

#[test]
fn a_panic_becomes_an_internal_error() {
    assert_eq!(guard(|| panic!("a bug in a tool")), AH_ERR_INTERNAL);
    let v: Vec<u32> = Vec::new();
    assert_eq!(guard(|| v[3] as AhStatus), AH_ERR_INTERNAL); // index out of bounds
    assert_eq!(guard(|| AH_ERR_NOT_FOUND), AH_ERR_NOT_FOUND);
}

// ---- the plugin driven through the C ABI, as the host does ------------------------------------

unsafe extern "C" fn collect(ctx: *mut c_void, data: *const c_char, len: usize) -> AhStatus {
    let out = &mut *(ctx as *mut Vec<u8>);
    out.extend_from_slice(std::slice::from_raw_parts(data as *const u8, len));
    AH_OK
}

unsafe extern "C" fn add_tool(ctx: *mut c_void, tool: *const AhToolDef) -> AhStatus {
    let names = &mut *(ctx as *mut Vec<String>);
    assert_eq!((*tool).struct_size, std::mem::size_of::<AhToolDef>());
    names.push(String::from_utf8((*tool).name.as_bytes().to_vec()).unwrap());
    AH_OK
}

fn writer(buffer: &mut Vec<u8>) -> AhWriter {
    AhWriter { struct_size: std::mem::size_of::<AhWriter>(), ctx: buffer as *mut Vec<u8> as *mut c_void, write: Some(collect) }
}

/// Calls a tool through the descriptor's call_tool slot; returns (status, result text).
unsafe fn call(plugin: &AhPlugin, instance: *mut AhInstance, tool: &str, arguments: &str) -> (AhStatus, String) {
    let mut out = Vec::new();
    let w = writer(&mut out);
    let empty = AhStr::from_str("");
    let c = AhCall {
        struct_size: std::mem::size_of::<AhCall>(),
        call_id: AhStr::from_str("call-1"),
        tool_name: AhStr::from_str(tool),
        arguments_json: AhStr::from_str(arguments),
        conversation_id: empty,
        request_context_json: AhStr::from_str("{}"),
        cancel: std::ptr::null(),
    };
    let status = (plugin.call_tool.unwrap())(instance, &c, &w);
    (status, String::from_utf8(out).unwrap())
}

#[test]
fn the_plugin_through_its_entry_point() {
    unsafe {
        let mut plugin: *const AhPlugin = std::ptr::null();
        assert_eq!(ah_plugin_init_v1(&mut plugin), AH_OK);
        let plugin = &*plugin;
        assert_eq!(plugin.struct_size, std::mem::size_of::<AhPlugin>());
        assert_eq!((plugin.abi_major, plugin.abi_minor, plugin.kind), (AH_ABI_MAJOR, AH_ABI_MINOR, AH_PLUGIN_KIND_TOOL));
        assert_eq!(std::ffi::CStr::from_ptr(plugin.name).to_str().unwrap(), "example_rust");
        assert!(plugin.chat.is_none() && plugin.context.is_none());

        // A host table as a 1.0 host compiles it: shorter, no tools_changed. create() copies only
        // what the host has.
        let mut api: AhHostApi = std::mem::zeroed();
        api.struct_size = offset_of!(AhHostApi, tools_changed);
        api.abi_major = 1;
        let mut error = Vec::new();
        let error_writer = writer(&mut error);
        let mut instance: *mut AhInstance = std::ptr::null_mut();
        assert_eq!((plugin.create.unwrap())(&api, std::ptr::null_mut(), &mut instance, &error_writer), AH_OK);
        assert!(!instance.is_null() && error.is_empty());

        let mut names: Vec<String> = Vec::new();
        let sink = AhToolSink { struct_size: std::mem::size_of::<AhToolSink>(), ctx: &mut names as *mut Vec<String> as *mut c_void, add: Some(add_tool) };
        assert_eq!((plugin.list_tools.unwrap())(instance, &sink), AH_OK);
        assert_eq!(names, ["rust_echo", "rust_add"]);

        let tricky = r#"{"text": "q\" b\\ \n\u0001 é🙂"}"#;
        assert_eq!(
            call(plugin, instance, "rust_echo", tricky),
            (AH_OK, "{\"content\":\"q\\\" b\\\\ \\n\\u0001 é🙂\",\"is_error\":false}".to_string())
        );
        assert_eq!(
            call(plugin, instance, "rust_add", r#"{"a": 2, "b": 3}"#),
            (AH_OK, "{\"content\":\"5\",\"is_error\":false,\"structured\":{\"sum\":5}}".to_string())
        );
        assert_eq!(call(plugin, instance, "rust_add", r#"{"a": 0.5, "b": -2}"#).1,
                   "{\"content\":\"-1.5\",\"is_error\":false,\"structured\":{\"sum\":-1.5}}");
        let (status, bad) = call(plugin, instance, "rust_add", r#"{"a": "two", "b": 1}"#);
        assert_eq!(status, AH_OK); // a tool that ran and failed is not a broken plugin
        assert!(bad.contains("\"is_error\":true,\"error_code\":\"invalid_arguments\""), "{}", bad);
        assert!(call(plugin, instance, "rust_add", r#"{"a": 1e308, "b": 1e308}"#).1.contains("out_of_range"));
        assert!(call(plugin, instance, "nope", "{}").1.contains("\"error_code\":\"unknown_tool\""));
        assert!(call(plugin, instance, "rust_echo", "{not json").1.contains("invalid_arguments"));

        (plugin.destroy.unwrap())(instance);
    }
}
