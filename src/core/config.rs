//! Configuration: UCX's environment names (`UCX_<PREFIX><FIELD>`), units and
//! config files, through libucs's parser, over tables we describe here.
//!
//! A config handed to C (`uct_md_config_t*`, `uct_iface_config_t*`,
//! `uct_cm_config_t*`) points at the parsed options; a small header placed in
//! front of it remembers the table, so `uct_config_get/modify/release` work
//! on any of the three kinds, as in UCX.

use crate::abi::*;
use crate::core::registry::{self, Kind};
use crate::ucs;
use libc::{c_char, c_int, c_uint, c_ulong, c_void};
use once_cell::sync::Lazy;
use std::ffi::{CStr, CString};

/// What libucs's parser stores for a `UNITS` value (memory or plain units)
/// of "auto" (`UCS_MEMUNITS_AUTO`, `UCS_ULUNITS_AUTO`) and of "inf".
pub const UNITS_AUTO: u64 = u64::MAX - 1;
pub const UNITS_INF: u64 = u64::MAX;
/// What it stores for a time value (in CPU clocks) of "auto"
/// (`UCS_TIME_AUTO`) and of "inf" (`UCS_TIME_INFINITY`).
pub const TIME_AUTO: u64 = u64::MAX - 1;
pub const TIME_INF: u64 = u64::MAX;

/// A NUL-terminated array of configuration rows, built once, in the row
/// layout of the running release: libucs walks it with its own stride
/// (1.13-1.16 value parsers have no `doc` member).
pub struct Table {
    rows: Vec<ucs_config_field_t>,
    rows_v1_13: Vec<ucs_config_field_t_v1_13>,
}
// SAFETY: a table is written once while it is built and only read after
// that; the raw pointers inside point to 'static strings and tables.
unsafe impl Sync for Table {}
// SAFETY: see above.
unsafe impl Send for Table {}

impl Table {
    pub fn new(mut fields: Vec<ucs_config_field_t>) -> Table {
        // SAFETY: all-zero is the terminating entry (name NULL).
        fields.push(unsafe { std::mem::zeroed() });
        if ucs::release::running().since(17) {
            return Table { rows: fields, rows_v1_13: Vec::new() };
        }
        let old = fields
            .iter()
            .map(|f| ucs_config_field_t_v1_13 {
                name: f.name,
                dfl_value: f.dfl_value,
                doc: f.doc,
                offset: f.offset,
                parser: (&f.parser).into(),
            })
            .collect();
        Table { rows: Vec::new(), rows_v1_13: old }
    }

    /// The table as libucs takes it (the release's row layout, whatever the
    /// pointer type says).
    pub fn as_ptr(&self) -> *mut ucs_config_field_t {
        if self.rows_v1_13.is_empty() {
            self.rows.as_ptr() as *mut ucs_config_field_t
        } else {
            self.rows_v1_13.as_ptr() as *mut ucs_config_field_t
        }
    }
}

/// A config table with its environment prefix and the size of its struct.
pub struct ConfigDesc {
    pub name: &'static CStr,
    pub prefix: &'static CStr,
    pub table: &'static Lazy<Table>,
    pub size: usize,
}

impl ConfigDesc {
    /// The table of the `repr(C)` struct `C` (its field offsets are
    /// `offset_of!(C, ..)`), parsed into a block of `size_of::<C>()` bytes.
    pub const fn of<C>(name: &'static CStr, prefix: &'static CStr, table: &'static Lazy<Table>) -> ConfigDesc {
        ConfigDesc { name, prefix, table, size: std::mem::size_of::<C>() }
    }
}

/// An options block handed back by C, checked to be one this module made.
#[derive(Clone, Copy)]
pub struct Parsed {
    opts: *const c_void,
    table: *mut ucs_config_field_t,
}

impl Parsed {
    /// The block behind a config pointer of the C API, if it is ours.
    ///
    /// # Safety
    /// The config must stay alive (not released) while the block is used.
    pub unsafe fn from_ptr(config: *const c_void) -> Option<Parsed> {
        // SAFETY: see the function contract.
        unsafe { header(config) }.map(|h| Parsed { opts: config, table: h.table })
    }

    /// Whether the block was parsed from `desc`'s table.
    pub fn is_from(&self, desc: &ConfigDesc) -> bool {
        self.table == Lazy::force(desc.table).as_ptr()
    }

    /// The block as the struct its table describes.
    ///
    /// # Safety
    /// The block was parsed from the table of `C` (see [`ConfigDesc::of`]).
    pub unsafe fn as_typed<'a, C>(&self) -> &'a C {
        // SAFETY: see the function contract: libucs filled a zeroed block of
        // size_of::<C>() bytes (at least 8-aligned) field by field; the
        // block lives until uct_config_release, after the open it serves.
        unsafe { &*(self.opts as *const C) }
    }
}

/// `ucs_config_array_t`, for fields that are lists of values, in the
/// layout of the running release (its element parser has a `doc` member
/// from 1.17 on).
pub struct ArrayDesc {
    array: ucs_config_array_t,
    array_v1_13: ucs_config_array_t_v1_13,
}
impl ArrayDesc {
    /// Arrays of `elem_size`-byte values, each parsed by `parser`.
    pub fn new(elem_size: usize, parser: ucs_config_parser_t) -> ArrayDesc {
        ArrayDesc {
            array: ucs_config_array_t { elem_size, parser },
            array_v1_13: ucs_config_array_t_v1_13 { elem_size, parser: (&parser).into() },
        }
    }

    /// The description as libucs takes it (the release's layout).
    pub fn as_ptr(&self) -> *const c_void {
        if ucs::release::running().since(17) {
            &self.array as *const ucs_config_array_t as *const c_void
        } else {
            &self.array_v1_13 as *const ucs_config_array_t_v1_13 as *const c_void
        }
    }
}

// SAFETY: immutable after construction; points to 'static data only.
unsafe impl Sync for ArrayDesc {}
// SAFETY: see above.
unsafe impl Send for ArrayDesc {}

pub fn field(name: &'static CStr, dfl: &'static CStr, doc: &'static CStr, offset: usize,
             parser: ucs_config_parser_t) -> ucs_config_field_t {
    ucs_config_field_t { name: name.as_ptr(), dfl_value: dfl.as_ptr(), doc: doc.as_ptr(), offset, parser }
}

/// Embed another table at `offset` (its fields take this table's prefix).
pub fn embed(table: &'static Lazy<Table>, offset: usize) -> ucs_config_field_t {
    field(c"", c"", c"", offset, parser::table(table))
}

/// A sub-table with its own prefix and overridden defaults
/// (`"FIELD=value;..."`, as UCX writes them).
pub fn embed_with_defaults(prefix: &'static CStr, defaults: &'static CStr, table: &'static Lazy<Table>,
                           offset: usize) -> ucs_config_field_t {
    field(prefix, defaults, c"", offset, parser::table(table))
}

/// A sub-table addressed with its own prefix (e.g. the `MM_` fields).
pub fn embed_prefixed(prefix: &'static CStr, table: &'static Lazy<Table>, offset: usize) -> ucs_config_field_t {
    field(prefix, c"", c"", offset, parser::table(table))
}

/// The value parsers of libucs, as they are combined in UCX's tables.
pub mod parser {
    use super::*;

    macro_rules! scalar {
        ($name:ident, $read:ident, $write:ident, $clone:ident, $release:ident, $help:ident, $doc:expr) => {
            pub fn $name() -> ucs_config_parser_t {
                ucs::parser::value_parser(Some(ucs::$read), Some(ucs::$write), ucs::$clone, ucs::$release,
                                          ucs::$help, $doc.as_ptr() as *const c_void)
            }
        };
    }

    scalar!(memunits, ucs_config_sscanf_memunits, ucs_config_sprintf_memunits, ucs_config_clone_ulong,
            ucs_config_release_nop, ucs_config_help_generic, c"memory units: <number>[b|kb|mb|gb], \"inf\", or \"auto\"");
    scalar!(ulunits, ucs_config_sscanf_ulunits, ucs_config_sprintf_ulunits, ucs_config_clone_ulong,
            ucs_config_release_nop, ucs_config_help_generic, c"unsigned long: <number>, \"inf\", or \"auto\"");
    scalar!(uint, ucs_config_sscanf_uint, ucs_config_sprintf_uint, ucs_config_clone_uint,
            ucs_config_release_nop, ucs_config_help_generic, c"unsigned integer");
    scalar!(int, ucs_config_sscanf_int, ucs_config_sprintf_int, ucs_config_clone_int,
            ucs_config_release_nop, ucs_config_help_generic, c"integer");
    scalar!(ulong, ucs_config_sscanf_ulong, ucs_config_sprintf_ulong, ucs_config_clone_ulong,
            ucs_config_release_nop, ucs_config_help_generic, c"unsigned long");
    scalar!(double, ucs_config_sscanf_double, ucs_config_sprintf_double, ucs_config_clone_double,
            ucs_config_release_nop, ucs_config_help_generic, c"floating point number");
    scalar!(boolean, ucs_config_sscanf_bool, ucs_config_sprintf_bool, ucs_config_clone_int,
            ucs_config_release_nop, ucs_config_help_generic, c"<y|n>");
    scalar!(string, ucs_config_sscanf_string, ucs_config_sprintf_string, ucs_config_clone_string,
            ucs_config_release_string, ucs_config_help_generic, c"string");
    scalar!(bw, ucs_config_sscanf_bw, ucs_config_sprintf_bw, ucs_config_clone_double,
            ucs_config_release_nop, ucs_config_help_generic,
            c"bandwidth value: <number>[T|G|M|K]B|b[[p|/]s] or \"auto\"");
    scalar!(time, ucs_config_sscanf_time, ucs_config_sprintf_time, ucs_config_clone_double,
            ucs_config_release_nop, ucs_config_help_generic, crate::core::release::time_syntax());
    scalar!(time_units, ucs_config_sscanf_time_units, ucs_config_sprintf_time_units, ucs_config_clone_ulong,
            ucs_config_release_nop, ucs_config_help_generic,
            crate::core::release::time_units_syntax());

    scalar!(on_off_auto, ucs_config_sscanf_on_off_auto, ucs_config_sprintf_on_off_auto, ucs_config_clone_int,
            ucs_config_release_nop, ucs_config_help_generic, c"<on|off|auto>");
    scalar!(ternary, ucs_config_sscanf_ternary, ucs_config_sprintf_ternary_auto, ucs_config_clone_int,
            ucs_config_release_nop, ucs_config_help_generic, c"<yes|no|try>");
    scalar!(ternary_auto, ucs_config_sscanf_ternary_auto, ucs_config_sprintf_ternary_auto, ucs_config_clone_int,
            ucs_config_release_nop, ucs_config_help_generic, c"<yes|no|try|auto>");
    scalar!(range_spec, ucs_config_sscanf_range_spec, ucs_config_sprintf_range_spec, ucs_config_clone_range_spec,
            ucs_config_release_nop, ucs_config_help_generic, c"numbers range: <number>-<number>");

    /// An enumeration; `names` is a NULL-terminated array of C strings.
    pub fn enumeration(names: *const *const c_char) -> ucs_config_parser_t {
        ucs::parser::value_parser(Some(ucs::ucs_config_sscanf_enum), Some(ucs::ucs_config_sprintf_enum),
                                  ucs::ucs_config_clone_uint, ucs::ucs_config_release_nop, ucs::ucs_config_help_enum,
                                  names as *const c_void)
    }

    pub fn table(t: &'static Lazy<Table>) -> ucs_config_parser_t {
        ucs::parser::value_parser(Some(ucs::ucs_config_sscanf_table), None, ucs::ucs_config_clone_table,
                                  ucs::ucs_config_release_table, ucs::ucs_config_help_table,
                                  Lazy::force(t).as_ptr() as *const c_void)
    }

    /// One key of a key-value field: its name, its documentation and where
    /// its value is stored (offset from the start of the table's struct).
    #[repr(C)]
    pub struct KeyField {
        pub name: *const c_char,
        pub doc: *const c_char,
        pub offset: usize,
    }

    /// The argument of libucs's key-value parser: the parser of each value
    /// and the NULL-name-terminated list of keys (1.17+, whose value
    /// parsers have the `doc` member).
    #[repr(C)]
    pub struct KeyValueParam {
        pub value: ucs_config_parser_t,
        pub keys: *const KeyField,
    }

    /// A key-value field (1.17+): a value for all keys, or `key:value`
    /// pairs, each stored at its key's offset (the field's own offset is 0).
    /// Only releases with libucs's key-value parser have such fields: where
    /// it is missing, the answer is None and the row must be left out.
    pub fn key_value(param: &'static KeyValueParam) -> Option<ucs_config_parser_t> {
        use ucs::optional as o;
        let p = ucs_config_parser_t {
            read: o::config_sscanf_key_value(),
            write: o::config_sprintf_key_value(),
            clone: o::config_clone_key_value(),
            release: o::config_release_key_value(),
            help: o::config_help_key_value(),
            doc: o::config_doc_key_value(),
            arg: param as *const KeyValueParam as *const c_void,
        };
        let complete = p.read.is_some() && p.write.is_some() && p.clone.is_some() && p.release.is_some()
                       && p.help.is_some() && p.doc.is_some();
        complete.then_some(p)
    }

    pub fn array(a: &'static ArrayDesc) -> ucs_config_parser_t {
        ucs::parser::value_parser(Some(ucs::ucs_config_sscanf_array), Some(ucs::ucs_config_sprintf_array),
                                  ucs::ucs_config_clone_array, ucs::ucs_config_release_array,
                                  ucs::ucs_config_help_array, a.as_ptr())
    }
}

// ---------------------------------------------------------------------------
// The tables shared by every transport.

/// `{ T *items; unsigned count; }`, the layout libucs fills for arrays.
#[repr(C)]
pub struct ConfigArray<T> {
    pub items: *mut T,
    pub count: c_uint,
}

/// The settings common to every interface (`UCX_<TL>_ALLOC`, `_FAILURE`,
/// `_MAX_NUM_EPS`).
#[repr(C)]
pub struct BaseIfaceConfig {
    pub alloc_methods: ConfigArray<uct_alloc_method_t>,
    pub failure: c_int,
    pub max_num_eps: c_ulong,
}

impl BaseIfaceConfig {
    pub fn alloc_methods(&self) -> Vec<uct_alloc_method_t> {
        if self.alloc_methods.items.is_null() {
            return Vec::new();
        }
        // SAFETY: libucs filled `items` with `count` values.
        unsafe { std::slice::from_raw_parts(self.alloc_methods.items, self.alloc_methods.count as usize) }.to_vec()
    }
}

/// Values of deprecated fields are accepted and ignored.
unsafe extern "C" fn deprecated_read(_: *const c_char, _: *mut c_void, _: *const c_void) -> c_int { 1 }
unsafe extern "C" fn deprecated_write(buf: *mut c_char, max: usize, _: *const c_void, _: *const c_void) -> c_int {
    if max > 0 {
        // SAFETY: libucs's buffer of `max` bytes.
        unsafe { *buf = 0 };
    }
    1
}
unsafe extern "C" fn deprecated_clone(_: *const c_void, _: *mut c_void, _: *const c_void) -> ucs_status_t { UCS_OK }
unsafe extern "C" fn deprecated_release(_: *mut c_void, _: *const c_void) {}
unsafe extern "C" fn deprecated_help(buf: *mut c_char, max: usize, _: *const c_void) {
    if max > 0 {
        // SAFETY: libucs's buffer of `max` bytes.
        unsafe { *buf = 0 };
    }
}

fn deprecated(name: &'static CStr, doc: &'static CStr) -> ucs_config_field_t {
    field(name, c"", doc, usize::MAX,
          ucs::parser::value_parser(Some(deprecated_read), Some(deprecated_write), deprecated_clone,
                                    deprecated_release, deprecated_help, c"".as_ptr() as *const c_void))
}

static ALLOC_METHODS_ARRAY: Lazy<ArrayDesc> = Lazy::new(|| {
    ArrayDesc::new(std::mem::size_of::<uct_alloc_method_t>(),
                   parser::enumeration(crate::core::mem::alloc_method_names_ptr()))
});

pub static BASE_IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        deprecated(c"MAX_SHORT", c"Deprecated: use the transport's FIFO/inline settings"),
        deprecated(c"MAX_BCOPY", c"Deprecated: use UCX_<transport>_SEG_SIZE"),
        field(c"ALLOC", c"huge,thp,md,mmap,heap",
              c"Order of methods used to allocate communication buffers",
              std::mem::offset_of!(BaseIfaceConfig, alloc_methods),
              parser::array(Lazy::force(&ALLOC_METHODS_ARRAY))),
        field(c"FAILURE", c"diag", c"Log level of network failure reports",
              std::mem::offset_of!(BaseIfaceConfig, failure),
              parser::enumeration(std::ptr::addr_of!(ucs::ucs_log_level_names) as *const *const c_char)),
        field(c"MAX_NUM_EPS", c"inf", c"Most endpoints an interface may create",
              std::mem::offset_of!(BaseIfaceConfig, max_num_eps), parser::ulunits()),
    ])
});

/// The memory-domain settings common to every component (none in 1.13.1).
#[repr(C)]
pub struct BaseMdConfig {
    pub _reserved: [u8; 0],
}

pub static BASE_MD_TABLE: Lazy<Table> = Lazy::new(|| Table::new(vec![]));

// ---------------------------------------------------------------------------
// Bundles: parsed options with a header in front.

/// Written into every header, for whoever looks at a core dump; never read
/// to decide whether a pointer is a config (the registry says that).
const BUNDLE_MAGIC: u64 = 0x7563_742d_6366_6721;

#[repr(C)]
struct BundleHeader {
    magic: u64,
    table: *mut ucs_config_field_t,
    size: usize,
    /// The table's own prefix (`TCP_`, ...), which `uct_config_modify`
    /// accepts in front of a name.
    prefix: *const c_char,
}

/// The environment prefix UCX builds: `UCX_` or `<env_prefix>_UCX_`.
fn full_prefix(env_prefix: Option<&CStr>) -> CString {
    match env_prefix {
        Some(p) if !p.to_bytes().is_empty() => {
            let mut v = p.to_bytes().to_vec();
            v.extend_from_slice(b"_UCX_");
            CString::new(v).unwrap_or_else(|_| CString::from(c"UCX_"))
        }
        _ => CString::from(c"UCX_"),
    }
}

/// Parse a table from defaults, config files and the environment. Returns
/// the options pointer handed to C.
pub fn read(desc: &ConfigDesc, env_prefix: Option<&CStr>) -> Result<*mut c_void, ucs_status_t> {
    let table = Lazy::force(desc.table).as_ptr();
    let hdr = std::mem::size_of::<BundleHeader>();
    // SAFETY: plain zeroed allocation, checked for NULL.
    let mem = unsafe { libc::calloc(1, hdr + desc.size.max(8)) } as *mut u8;
    if mem.is_null() {
        return Err(UCS_ERR_NO_MEMORY);
    }
    // SAFETY: `mem` holds the header followed by the options block.
    unsafe {
        (mem as *mut BundleHeader).write(BundleHeader { magic: BUNDLE_MAGIC, table, size: desc.size,
                                                        prefix: desc.prefix.as_ptr() });
        let opts = mem.add(hdr) as *mut c_void;
        let prefix = full_prefix(env_prefix);
        let mut local = ucs::parser::entry(desc.name.as_ptr(), desc.prefix.as_ptr(), table, desc.size);
        let entry = crate::core::config_list::published(desc).unwrap_or(&mut local as *mut _);
        let status = ucs::parser::fill_opts(opts, entry, prefix.as_ptr());
        if status != UCS_OK {
            libc::free(mem as *mut c_void);
            return Err(status);
        }
        registry::register(opts, Kind::Config);
        Ok(opts)
    }
}

/// The header of a live config made by [`read`], if `config` is one.
///
/// # Safety
/// The config must stay alive while the header is used.
unsafe fn header<'a>(config: *const c_void) -> Option<&'a mut BundleHeader> {
    if !registry::is(config, Kind::Config) {
        return None;
    }
    // SAFETY: a live config of ours has its header right in front, in the
    // same allocation.
    Some(unsafe { &mut *((config as *mut u8).sub(std::mem::size_of::<BundleHeader>()) as *mut BundleHeader) })
}

/// Release a config: `UCS_ERR_INVALID_PARAM` (and nothing done) when it is
/// not a live config of ours; of two threads releasing one config, one
/// frees it.
///
/// # Safety
/// Nothing uses the config once this returned `UCS_OK`.
pub unsafe fn release(config: *mut c_void) -> ucs_status_t {
    if !registry::take(config, Kind::Config) {
        return UCS_ERR_INVALID_PARAM;
    }
    // SAFETY: it was live, so it is ours, with its header in front, and
    // taking the entry made this call its only owner: the options parsed
    // from `h.table` are released once, then the bundle `read` calloc'ed.
    unsafe {
        let h = &mut *((config as *mut u8).sub(std::mem::size_of::<BundleHeader>()) as *mut BundleHeader);
        ucs::ucs_config_parser_release_opts(config, h.table);
        h.magic = 0;
        libc::free(h as *mut BundleHeader as *mut c_void);
    }
    UCS_OK
}

/// # Safety
/// No other thread releases the config during the call; `name`/`value`
/// are C strings.
pub unsafe fn modify(config: *mut c_void, name: *const c_char, value: *const c_char) -> ucs_status_t {
    // SAFETY: see the function contract.
    match unsafe { header(config) } {
        Some(h) if !name.is_null() && !value.is_null() => {
            // SAFETY: options parsed from `h.table`; C strings checked
            // non-NULL.
            unsafe { ucs::parser::set_value(config, h.table, h.prefix, name, value) }
        }
        _ => UCS_ERR_INVALID_PARAM,
    }
}

/// # Safety
/// No other thread releases the config during the call; `value` holds
/// `max` bytes.
pub unsafe fn get(config: *mut c_void, name: *const c_char, value: *mut c_char, max: usize) -> ucs_status_t {
    // SAFETY: see the function contract.
    match unsafe { header(config) } {
        Some(h) if !name.is_null() && !value.is_null() => {
            // SAFETY: options parsed from `h.table`; C strings checked
            // non-NULL.
            unsafe { ucs::ucs_config_parser_get_value(config, h.table, name, value, max) }
        }
        _ => UCS_ERR_INVALID_PARAM,
    }
}

/// UCX's rule for a transport's buffer pool settings (`*_BUFS_GROW` and
/// `*_MAX_BUFS`): the pool grows by at least one buffer at a time and never
/// beyond its limit, which is read as unsigned (`-1`: no limit).  The C
/// original rejects other values when the interface is opened, with
/// `UCS_ERR_INVALID_PARAM`, and so does this library.
pub fn check_pool_limits(what: &str, grow: libc::c_uint, max_bufs: libc::c_int) -> Result<(), ucs_status_t> {
    let max = max_bufs as libc::c_uint;
    if grow == 0 || max < grow {
        crate::error!("Invalid memory pool parameter(s): {} grows by {} up to {} buffers", what, grow, max_bufs);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    Ok(())
}
