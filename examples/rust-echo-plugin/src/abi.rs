//! Hand-written `#[repr(C)]` bindings to `sdk/include/agenthost/agenthost.h`, ABI 1.3.
//!
//! Every struct mirrors the C declaration member for member, in the same order, with the same
//! names; the tests in `lib.rs` compare their sizes and offsets with the table the C compiler
//! produces (`docs/abi-layout.md`, `sdk/abi/abi_layout.c`). Function slots that C allows to be
//! NULL are `Option<unsafe extern "C" fn …>`, which Rust guarantees to have the size of a plain
//! function pointer, with `None` as NULL.
//!
//! Ownership is the header's: every pointer received is borrowed for the duration of the call;
//! every output goes through a writer or sink that the receiving side owns.
#![allow(dead_code)] // the whole contract is bound, not only what the example uses

use std::os::raw::{c_char, c_void};

/// `AH_ABI_MAJOR`: part of the entry symbol's name; a different major never loads.
pub const AH_ABI_MAJOR: u32 = 1;
/// `AH_ABI_MINOR` of the header these bindings were written from (plugin.toml says the same).
pub const AH_ABI_MINOR: u32 = 3;

/// `ah_status`: 0 is success, negative is failure; unknown negative values are failures.
pub type AhStatus = i32;
pub const AH_OK: AhStatus = 0;
pub const AH_ERR_FAILED: AhStatus = -1;
pub const AH_ERR_INVALID_ARGUMENT: AhStatus = -2;
pub const AH_ERR_NOT_FOUND: AhStatus = -3;
pub const AH_ERR_UNSUPPORTED: AhStatus = -4;
pub const AH_ERR_CANCELLED: AhStatus = -5;
pub const AH_ERR_NO_MEMORY: AhStatus = -6;
pub const AH_ERR_IO: AhStatus = -7;
pub const AH_ERR_TIMEOUT: AhStatus = -8;
/// A bug: what every entry point returns when it caught a panic.
pub const AH_ERR_INTERNAL: AhStatus = -9;

pub const AH_LOG_TRACE: i32 = 0;
pub const AH_LOG_DEBUG: i32 = 1;
pub const AH_LOG_INFO: i32 = 2;
pub const AH_LOG_WARN: i32 = 3;
pub const AH_LOG_ERROR: i32 = 4;

pub const AH_TOOL_READ_ONLY: u32 = 1 << 0;
pub const AH_TOOL_DESTRUCTIVE: u32 = 1 << 1;
pub const AH_TOOL_IDEMPOTENT: u32 = 1 << 2;
pub const AH_TOOL_OPEN_WORLD: u32 = 1 << 3;

pub const AH_PLUGIN_KIND_TOOL: i32 = 1;
pub const AH_PLUGIN_KIND_PROVIDER: i32 = 2;
pub const AH_PLUGIN_THREAD_SAFE: u32 = 1 << 0;

pub const AH_HTTP_NO_REDIRECTS: u32 = 1 << 0;

/// `ah_str`: a borrowed UTF-8 string, `len` bytes at `data` (NULL only when `len` is 0).
/// Frozen forever, so it has no `struct_size`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AhStr {
    pub data: *const c_char,
    pub len: usize,
}

impl AhStr {
    /// A view of `text`; it borrows `text`, so keep `text` alive while the view is used.
    pub fn from_str(text: &str) -> AhStr {
        AhStr { data: text.as_ptr() as *const c_char, len: text.len() }
    }

    /// The bytes, borrowed. Safety: `data` must point to `len` readable bytes (or `len` be 0)
    /// for as long as the slice is used, which the ABI guarantees during the call.
    pub unsafe fn as_bytes<'a>(&self) -> &'a [u8] {
        if self.len == 0 || self.data.is_null() {
            &[]
        } else {
            std::slice::from_raw_parts(self.data as *const u8, self.len)
        }
    }
}

/// `ah_writer`: an output channel owned by the receiving side.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AhWriter {
    pub struct_size: usize,
    pub ctx: *mut c_void,
    pub write: Option<unsafe extern "C" fn(ctx: *mut c_void, data: *const c_char, len: usize) -> AhStatus>,
}

/// `ah_host`, `ah_cancel`: opaque handles owned by the host.
#[repr(C)]
pub struct AhHost {
    _private: [u8; 0],
}
#[repr(C)]
pub struct AhCancel {
    _private: [u8; 0],
}
/// `ah_instance`: defined by the plugin; the host only passes the pointer back. This crate keeps
/// a `Box<Instance>` behind it (see lib.rs).
#[repr(C)]
pub struct AhInstance {
    _private: [u8; 0],
}

/// `ah_http_request` (members from `flags` on: since 1.1).
#[repr(C)]
pub struct AhHttpRequest {
    pub struct_size: usize,
    pub method: AhStr,
    pub url: AhStr,
    pub headers_json: AhStr,
    pub body: AhStr,
    pub timeout_ms: u32,
    pub connect_timeout_ms: u32,
    pub flags: u32,
    pub resolve_to: AhStr,
}

/// `ah_http_sink`: receives an HTTP response; owned by the plugin.
#[repr(C)]
pub struct AhHttpSink {
    pub struct_size: usize,
    pub ctx: *mut c_void,
    pub on_head: Option<unsafe extern "C" fn(ctx: *mut c_void, status_code: i32, headers_json: AhStr) -> AhStatus>,
    pub on_body: Option<unsafe extern "C" fn(ctx: *mut c_void, data: *const c_char, len: usize) -> AhStatus>,
}

/// `ah_host_api`: the host's services, valid from create() until destroy() returns.
/// `tools_changed` is since 1.3: an older host's table is shorter. Read the table with
/// `read_sized` (never through a `&AhHostApi` made from the host's pointer, which would claim
/// bytes an older host does not have); a slot the host lacks then reads as `None`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AhHostApi {
    pub struct_size: usize,
    pub abi_major: u32,
    pub abi_minor: u32,
    pub host_version: *const c_char,
    pub log: Option<unsafe extern "C" fn(host: *mut AhHost, level: i32, message: AhStr, fields_json: AhStr)>,
    pub get_config: Option<unsafe extern "C" fn(host: *mut AhHost, out: *const AhWriter) -> AhStatus>,
    pub kv_get: Option<unsafe extern "C" fn(host: *mut AhHost, key: AhStr, out: *const AhWriter) -> AhStatus>,
    pub kv_set: Option<unsafe extern "C" fn(host: *mut AhHost, key: AhStr, value: AhStr) -> AhStatus>,
    pub kv_delete: Option<unsafe extern "C" fn(host: *mut AhHost, key: AhStr) -> AhStatus>,
    pub memory_get:
        Option<unsafe extern "C" fn(host: *mut AhHost, conversation: AhStr, key: AhStr, out: *const AhWriter) -> AhStatus>,
    pub memory_set:
        Option<unsafe extern "C" fn(host: *mut AhHost, conversation: AhStr, key: AhStr, value_json: AhStr) -> AhStatus>,
    pub post_event: Option<unsafe extern "C" fn(host: *mut AhHost, conversation: AhStr, event_json: AhStr) -> AhStatus>,
    pub http_request: Option<
        unsafe extern "C" fn(
            host: *mut AhHost,
            request: *const AhHttpRequest,
            sink: *const AhHttpSink,
            cancel: *const AhCancel,
        ) -> AhStatus,
    >,
    pub data_dir: Option<unsafe extern "C" fn(host: *mut AhHost, out: *const AhWriter) -> AhStatus>,
    pub is_cancelled: Option<unsafe extern "C" fn(host: *mut AhHost, cancel: *const AhCancel) -> i32>,
    pub tools_changed: Option<unsafe extern "C" fn(host: *mut AhHost) -> AhStatus>,
}

/// `ah_tool_def`: one tool; the strings are borrowed for the duration of `AhToolSink::add`.
#[repr(C)]
pub struct AhToolDef {
    pub struct_size: usize,
    pub name: AhStr,
    pub description: AhStr,
    pub input_schema_json: AhStr,
    pub hints: u32,
}

/// `ah_tool_sink`: receives tool definitions from list_tools(); owned by the host.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AhToolSink {
    pub struct_size: usize,
    pub ctx: *mut c_void,
    pub add: Option<unsafe extern "C" fn(ctx: *mut c_void, tool: *const AhToolDef) -> AhStatus>,
}

/// `ah_call`: the context of one call; every member is borrowed for the duration of the call.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AhCall {
    pub struct_size: usize,
    pub call_id: AhStr,
    pub tool_name: AhStr,
    pub arguments_json: AhStr,
    pub conversation_id: AhStr,
    pub request_context_json: AhStr,
    pub cancel: *const AhCancel,
}

/// `ah_event_sink`: receives a provider's events; owned by the host.
#[repr(C)]
pub struct AhEventSink {
    pub struct_size: usize,
    pub ctx: *mut c_void,
    pub emit: Option<unsafe extern "C" fn(ctx: *mut c_void, event_type: i32, payload: AhStr) -> AhStatus>,
}

pub type CreateFn = unsafe extern "C" fn(
    api: *const AhHostApi,
    host: *mut AhHost,
    out_instance: *mut *mut AhInstance,
    error: *const AhWriter,
) -> AhStatus;
pub type DestroyFn = unsafe extern "C" fn(instance: *mut AhInstance);
pub type ListToolsFn = unsafe extern "C" fn(instance: *mut AhInstance, tools: *const AhToolSink) -> AhStatus;
pub type CallFn = unsafe extern "C" fn(instance: *mut AhInstance, call: *const AhCall, out: *const AhWriter) -> AhStatus;
pub type ChatFn =
    unsafe extern "C" fn(instance: *mut AhInstance, call: *const AhCall, events: *const AhEventSink) -> AhStatus;

/// `ah_plugin`: the descriptor returned by the entry point; it lives as long as the library.
/// `list_resources` and `read_resource` are since 1.2.
#[repr(C)]
pub struct AhPlugin {
    pub struct_size: usize,
    pub abi_major: u32,
    pub abi_minor: u32,
    pub kind: i32,
    pub flags: u32,
    pub name: *const c_char,
    pub version: *const c_char,
    pub create: Option<CreateFn>,
    pub destroy: Option<DestroyFn>,
    pub list_tools: Option<ListToolsFn>,
    pub call_tool: Option<CallFn>,
    pub context: Option<CallFn>,
    pub chat: Option<ChatFn>,
    pub list_models: Option<CallFn>,
    pub list_resources: Option<CallFn>,
    pub read_resource: Option<CallFn>,
}

/// `ah_plugin_init_v1_fn`, the type of the entry point.
pub type InitFn = unsafe extern "C" fn(out_plugin: *mut *const AhPlugin) -> AhStatus;

/// Reads a struct the other side filled (ABI rule 1): copies min(its struct_size, our size) bytes
/// into a zeroed value, so members the writer did not know read as zero and members we do not
/// know are ignored. Safety: `src` points to a struct starting with `usize struct_size`, readable
/// for that many bytes; `T` is a `#[repr(C)]` struct for which all-zero bytes are a valid value.
pub unsafe fn read_sized<T: Copy>(src: *const T) -> T {
    let mut value: T = std::mem::zeroed();
    let src_size = std::ptr::read_unaligned(src as *const usize);
    let n = src_size.min(std::mem::size_of::<T>());
    std::ptr::copy_nonoverlapping(src as *const u8, &mut value as *mut T as *mut u8, n);
    value
}
