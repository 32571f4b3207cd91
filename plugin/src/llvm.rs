//! The binding layer: the only module that touches llvm-sys and the C++ shim.
//!
//! Small copyable handles over LLVM-C references. Everything here is valid only while the module
//! being transformed is alive, which is the whole run of one pass; the pass never keeps handles
//! across runs. Within a run the only operations that free IR are `Value::erase` and
//! `Value::delete_function`, and they are `unsafe fn`: their callers promise that no copy of the
//! handle, and no name borrowed from it (`Value::name_ref` borrows from the handle), is used
//! afterwards. Every other function here is safe to call on a live handle.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_uint};

use crate::compat::sys;
use sys::core::*;
use sys::prelude::*;

extern "C" {
    fn sqtt_shim_emit_error(m: LLVMModuleRef, msg: *const c_char);
    fn sqtt_shim_append_to_used(m: LLVMModuleRef, gv: LLVMValueRef);
    fn sqtt_shim_build_scoped_fence(b: LLVMBuilderRef, scope: *const c_char) -> LLVMValueRef;
    fn sqtt_shim_set_mmra(inst: LLVMValueRef, key: *const c_char, value: *const c_char) -> c_uint;
    fn sqtt_shim_split_block(inst: LLVMValueRef, name: *const c_char) -> LLVMBasicBlockRef;
    fn sqtt_shim_first_insertion_point(bb: LLVMBasicBlockRef) -> LLVMValueRef;
    fn sqtt_shim_fence_is_workgroup_or_wider(inst: LLVMValueRef) -> c_uint;
    fn sqtt_shim_inline_asm_string(callee: LLVMValueRef, len: *mut usize) -> *const c_char;
    fn sqtt_shim_inline_call(call: LLVMValueRef) -> c_uint;
    fn sqtt_shim_erase_named_md(m: LLVMModuleRef, nmd: LLVMNamedMDNodeRef);
    fn sqtt_shim_disable_unroll(branch: LLVMValueRef);
}

/// Reads a metadata node (as a value) into integers and strings; other operands are skipped.
fn read_md_node(node: LLVMValueRef) -> Vec<MdItem> {
    unsafe {
        if node.is_null() || LLVMIsAMDNode(node).is_null() {
            return Vec::new();
        }
        let n = LLVMGetMDNodeNumOperands(node);
        let mut ops: Vec<LLVMValueRef> = vec![std::ptr::null_mut(); n as usize];
        LLVMGetMDNodeOperands(node, ops.as_mut_ptr());
        ops.into_iter()
            .filter_map(|op| {
                if op.is_null() {
                    return None;
                }
                if !LLVMIsAMDString(op).is_null() {
                    let mut len = 0u32;
                    let p = LLVMGetMDString(op, &mut len);
                    return Some(MdItem::Str(string_of(p, len as usize)));
                }
                if !LLVMIsAConstantInt(op).is_null() {
                    return Some(MdItem::Int(LLVMConstIntGetZExtValue(op)));
                }
                None
            })
            .collect()
    }
}

/// A metadata operand: an integer or a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MdItem {
    Int(u64),
    Str(String),
}

/// LLVM's calling convention number of AMDGPU kernels.
const AMDGPU_KERNEL_CC: c_uint = 91;

/// The handles of an LLVM-C list: `first`, then `next` of each, until null.
///
/// # Safety
/// `first` must be null or a live handle, and the list must not change during the call.
unsafe fn walk<H>(first: *mut H, next: unsafe extern "C" fn(*mut H) -> *mut H) -> Vec<*mut H> {
    let mut out = Vec::new();
    let mut cur = first;
    while !cur.is_null() {
        out.push(cur);
        cur = next(cur);
    }
    out
}

fn cstr(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).expect("no interior NUL")
}

fn string_of(ptr: *const c_char, len: usize) -> String {
    if ptr.is_null() {
        return String::new();
    }
    let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
    String::from_utf8_lossy(bytes).into_owned()
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Module(LLVMModuleRef);

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Value(LLVMValueRef);

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Block(LLVMBasicBlockRef);

#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Type(LLVMTypeRef);

impl Module {
    /// # Safety
    /// `m` must be a live module for as long as the handle is used.
    pub unsafe fn from_raw(m: LLVMModuleRef) -> Module {
        Module(m)
    }

    fn ctx(self) -> LLVMContextRef {
        unsafe { LLVMGetModuleContext(self.0) }
    }

    pub fn triple(self) -> String {
        unsafe { CStr::from_ptr(LLVMGetTarget(self.0)) }
            .to_string_lossy()
            .into_owned()
    }

    pub fn is_amdgpu(self) -> bool {
        self.triple().starts_with("amdgcn")
    }

    /// Reports a compile error (clang prints it and fails the compilation).
    pub fn emit_error(self, msg: &str) {
        let c = cstr(msg);
        unsafe { sqtt_shim_emit_error(self.0, c.as_ptr()) }
    }

    pub fn functions(self) -> Vec<Value> {
        // SAFETY: a live module's function list.
        let list = unsafe { walk(LLVMGetFirstFunction(self.0), LLVMGetNextFunction) };
        list.into_iter().map(Value).collect()
    }

    pub fn function(self, name: &str) -> Option<Value> {
        let c = cstr(name);
        let f = unsafe { LLVMGetNamedFunction(self.0, c.as_ptr()) };
        (!f.is_null()).then_some(Value(f))
    }

    pub fn global(self, name: &str) -> Option<Value> {
        let c = cstr(name);
        let g = unsafe { LLVMGetNamedGlobal(self.0, c.as_ptr()) };
        (!g.is_null()).then_some(Value(g))
    }

    pub fn i1(self) -> Type {
        Type(unsafe { LLVMInt1TypeInContext(self.ctx()) })
    }
    pub fn i16(self) -> Type {
        Type(unsafe { LLVMInt16TypeInContext(self.ctx()) })
    }
    pub fn i32(self) -> Type {
        Type(unsafe { LLVMInt32TypeInContext(self.ctx()) })
    }
    pub fn i64(self) -> Type {
        Type(unsafe { LLVMInt64TypeInContext(self.ctx()) })
    }
    pub fn i128(self) -> Type {
        Type(unsafe { LLVMInt128TypeInContext(self.ctx()) })
    }
    pub fn void(self) -> Type {
        Type(unsafe { LLVMVoidTypeInContext(self.ctx()) })
    }

    pub fn const_i32(self, v: u32) -> Value {
        Value(unsafe { LLVMConstInt(self.i32().0, v as u64, 0) })
    }

    /// A literal (unnamed) struct of `fields`, e.g. an asm's several outputs.
    pub fn struct_of(self, fields: &[Type]) -> Type {
        let mut f: Vec<LLVMTypeRef> = fields.iter().map(|t| t.0).collect();
        Type(unsafe { LLVMStructTypeInContext(self.ctx(), f.as_mut_ptr(), f.len() as c_uint, 0) })
    }

    pub fn fn_type(self, ret: Type, params: &[Type]) -> Type {
        let mut p: Vec<LLVMTypeRef> = params.iter().map(|t| t.0).collect();
        Type(unsafe { LLVMFunctionType(ret.0, p.as_mut_ptr(), p.len() as c_uint, 0) })
    }

    /// Declares (or finds) a function, e.g. an intrinsic.
    pub fn declare(self, name: &str, ty: Type) -> Value {
        if let Some(f) = self.function(name) {
            return f;
        }
        let c = cstr(name);
        Value(unsafe { LLVMAddFunction(self.0, c.as_ptr(), ty.0) })
    }

    /// An `asm sideeffect` callee.
    pub fn inline_asm(self, ty: Type, asm: &str, constraints: &str) -> Value {
        unsafe {
            Value(LLVMGetInlineAsm(
                ty.0,
                asm.as_ptr() as *mut c_char,
                asm.len(),
                constraints.as_ptr() as *mut c_char,
                constraints.len(),
                1,
                0,
                sys::LLVMInlineAsmDialect::LLVMInlineAsmDialectATT,
                0,
            ))
        }
    }

    /// A private constant byte string in `section`, kept by `llvm.used`.
    pub fn add_section_bytes(self, name: &str, section: &str, bytes: &[u8], addrspace: u32) {
        unsafe {
            #[allow(deprecated)] // LLVMConstStringInContext2 exists only from LLVM 19
            let init = LLVMConstStringInContext(
                self.ctx(),
                bytes.as_ptr() as *const c_char,
                bytes.len() as c_uint,
                1,
            );
            let n = cstr(name);
            let gv = LLVMAddGlobalInAddressSpace(self.0, LLVMTypeOf(init), n.as_ptr(), addrspace);
            LLVMSetInitializer(gv, init);
            LLVMSetGlobalConstant(gv, 1);
            LLVMSetLinkage(gv, sys::LLVMLinkage::LLVMInternalLinkage);
            let s = cstr(section);
            LLVMSetSection(gv, s.as_ptr());
            LLVMSetAlignment(gv, 1);
            sqtt_shim_append_to_used(self.0, gv);
        }
    }

    /// The context this module lives in, as an opaque key.
    pub fn context_key(self) -> usize {
        self.ctx() as usize
    }

    pub fn md_kind(self, name: &str) -> c_uint {
        unsafe {
            LLVMGetMDKindIDInContext(
                self.ctx(),
                name.as_ptr() as *const c_char,
                name.len() as c_uint,
            )
        }
    }

    /// An empty metadata node, used as a tag.
    pub fn empty_md(self) -> LLVMValueRef {
        unsafe {
            LLVMMetadataAsValue(
                self.ctx(),
                LLVMMDNodeInContext2(self.ctx(), std::ptr::null_mut(), 0),
            )
        }
    }

    /// A metadata node of integers and strings.
    pub fn md_node_ref(self, items: &[MdItem]) -> LLVMMetadataRef {
        unsafe {
            let ctx = self.ctx();
            let mut ops: Vec<LLVMMetadataRef> = items
                .iter()
                .map(|it| match it {
                    MdItem::Int(v) => {
                        LLVMValueAsMetadata(LLVMConstInt(LLVMInt64TypeInContext(ctx), *v, 0))
                    }
                    MdItem::Str(s) => {
                        LLVMMDStringInContext2(ctx, s.as_ptr() as *const c_char, s.len())
                    }
                })
                .collect();
            LLVMMDNodeInContext2(ctx, ops.as_mut_ptr(), ops.len())
        }
    }

    /// [`Module::md_node_ref`] as a value (for instruction attachments and named metadata).
    pub fn md_node(self, items: &[MdItem]) -> LLVMValueRef {
        unsafe { LLVMMetadataAsValue(self.ctx(), self.md_node_ref(items)) }
    }

    /// Appends a node to a named metadata list.
    pub fn add_named_md(self, name: &str, node: LLVMValueRef) {
        let c = cstr(name);
        unsafe { LLVMAddNamedMetadataOperand(self.0, c.as_ptr(), node) }
    }

    /// The nodes of a named metadata list, each read as integers and strings.
    pub fn named_md(self, name: &str) -> Vec<Vec<MdItem>> {
        let c = cstr(name);
        unsafe {
            let n = LLVMGetNamedMetadataNumOperands(self.0, c.as_ptr());
            let mut nodes: Vec<LLVMValueRef> = vec![std::ptr::null_mut(); n as usize];
            if n > 0 {
                LLVMGetNamedMetadataOperands(self.0, c.as_ptr(), nodes.as_mut_ptr());
            }
            nodes.into_iter().map(read_md_node).collect()
        }
    }

    /// Whether the module has a named metadata list of this name.
    pub fn has_named_md(self, name: &str) -> bool {
        !unsafe { LLVMGetNamedMetadata(self.0, name.as_ptr() as *const c_char, name.len()) }
            .is_null()
    }

    /// Removes a named metadata list.
    pub fn erase_named_md(self, name: &str) {
        unsafe {
            let nmd = LLVMGetNamedMetadata(self.0, name.as_ptr() as *const c_char, name.len());
            if !nmd.is_null() {
                sqtt_shim_erase_named_md(self.0, nmd);
            }
        }
    }

    pub fn identifier(self) -> String {
        let mut len = 0usize;
        let p = unsafe { LLVMGetModuleIdentifier(self.0, &mut len) };
        string_of(p, len)
    }

    pub fn builder(self) -> Builder {
        Builder(unsafe { LLVMCreateBuilderInContext(self.ctx()) })
    }
}

impl Value {
    /// # Safety
    /// `v` must be a live value for as long as the handle is used.
    pub unsafe fn from_raw(v: LLVMValueRef) -> Value {
        Value(v)
    }

    pub fn name(self) -> String {
        self.name_ref().to_string()
    }

    /// The name without copying it, borrowed from this handle: the value must not be erased or
    /// deleted while the name is in use (`erase` and `delete_function` are `unsafe` for that).
    pub fn name_ref(&self) -> &str {
        let mut len = 0usize;
        let p = unsafe { LLVMGetValueName2(self.0, &mut len) };
        if p.is_null() {
            return "";
        }
        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
        std::str::from_utf8(bytes).unwrap_or("")
    }

    // --- functions ---

    pub fn is_declaration(self) -> bool {
        unsafe { LLVMIsDeclaration(self.0) != 0 }
    }

    pub fn is_kernel(self) -> bool {
        unsafe { LLVMGetFunctionCallConv(self.0) == AMDGPU_KERNEL_CC }
    }

    /// A string function attribute such as `target-cpu`.
    pub fn string_attribute(self, key: &str) -> Option<String> {
        unsafe {
            let a = LLVMGetStringAttributeAtIndex(
                self.0,
                sys::LLVMAttributeFunctionIndex,
                key.as_ptr() as *const c_char,
                key.len() as c_uint,
            );
            if a.is_null() {
                return None;
            }
            let mut len = 0u32;
            let p = LLVMGetStringAttributeValue(a, &mut len);
            Some(string_of(p, len as usize))
        }
    }

    /// The first function of this function's module.
    pub fn first_function_of_module(self) -> Option<Value> {
        unsafe {
            let m = LLVMGetGlobalParent(self.0);
            let f = LLVMGetFirstFunction(m);
            (!f.is_null()).then_some(Value(f))
        }
    }

    /// The next function of the module.
    pub fn next_function(self) -> Option<Value> {
        let f = unsafe { LLVMGetNextFunction(self.0) };
        (!f.is_null()).then_some(Value(f))
    }

    pub fn blocks(self) -> Vec<Block> {
        // SAFETY: a live function's block list.
        let list = unsafe { walk(LLVMGetFirstBasicBlock(self.0), LLVMGetNextBasicBlock) };
        list.into_iter().map(Block).collect()
    }

    pub fn entry_block(self) -> Option<Block> {
        let b = unsafe { LLVMGetFirstBasicBlock(self.0) };
        (!b.is_null()).then_some(Block(b))
    }

    /// The function's `DISubprogram` line and file, when it has debug info.
    pub fn subprogram(self) -> Option<LLVMMetadataRef> {
        let sp = unsafe { sys::debuginfo::LLVMGetSubprogram(self.0) };
        (!sp.is_null()).then_some(sp)
    }

    // --- instructions ---

    pub fn opcode(self) -> sys::LLVMOpcode {
        unsafe { LLVMGetInstructionOpcode(self.0) }
    }

    pub fn is_call(self) -> bool {
        unsafe { !LLVMIsACallInst(self.0).is_null() }
    }

    /// An `invoke` or `callbr`: a call that is not a `call` instruction.
    pub fn is_invoke_or_callbr(self) -> bool {
        matches!(
            self.opcode(),
            sys::LLVMOpcode::LLVMInvoke | sys::LLVMOpcode::LLVMCallBr
        )
    }

    pub fn is_instruction(self) -> bool {
        unsafe { !LLVMIsAInstruction(self.0).is_null() }
    }

    /// The called function of a direct call.
    pub fn called_function(self) -> Option<Value> {
        if !self.is_call() {
            return None;
        }
        let callee = unsafe { LLVMGetCalledValue(self.0) };
        let f = unsafe { LLVMIsAFunction(callee) };
        (!f.is_null()).then_some(Value(f))
    }

    /// The text of the inline asm this instruction calls, if it calls one, without copying it:
    /// borrowed from this handle (as [`Value::name_ref`]).
    pub fn called_inline_asm(&self) -> Option<&str> {
        if !self.is_call() {
            return None;
        }
        let callee = unsafe { LLVMGetCalledValue(self.0) };
        if unsafe { LLVMIsAInlineAsm(callee) }.is_null() {
            return None;
        }
        let mut len = 0usize;
        let p = unsafe { sqtt_shim_inline_asm_string(callee, &mut len) };
        if p.is_null() {
            return Some("");
        }
        // The text lives in the context's uniqued InlineAsm, as long as the call does.
        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
        Some(std::str::from_utf8(bytes).unwrap_or(""))
    }

    pub fn operand(self, i: u32) -> Value {
        Value(unsafe { LLVMGetOperand(self.0, i) })
    }

    pub fn num_operands(self) -> u32 {
        unsafe { LLVMGetNumOperands(self.0) as u32 }
    }

    /// Argument i of a call.
    pub fn arg(self, i: u32) -> Value {
        self.operand(i)
    }

    pub fn num_args(self) -> u32 {
        unsafe { LLVMGetNumArgOperands(self.0) }
    }

    pub fn parent_block(self) -> Block {
        Block(unsafe { LLVMGetInstructionParent(self.0) })
    }

    pub fn next(self) -> Option<Value> {
        let n = unsafe { LLVMGetNextInstruction(self.0) };
        (!n.is_null()).then_some(Value(n))
    }

    pub fn prev(self) -> Option<Value> {
        let n = unsafe { LLVMGetPreviousInstruction(self.0) };
        (!n.is_null()).then_some(Value(n))
    }

    /// Erases the instruction from its block and frees it.
    ///
    /// # Safety
    /// No handle to the instruction (or name borrowed from one) may be used afterwards: handles
    /// are plain copies of LLVM's pointer and cannot know it is gone.
    pub unsafe fn erase(self) {
        unsafe { LLVMInstructionEraseFromParent(self.0) }
    }

    /// Deletes a function (a declaration nothing uses any more) from its module.
    ///
    /// # Safety
    /// As for [`Value::erase`]: no handle to the function or name borrowed from it may be used
    /// afterwards.
    pub unsafe fn delete_function(self) {
        unsafe { LLVMDeleteFunction(self.0) }
    }

    /// Makes every use of this value a use of `with` instead, or of poison when `with` has
    /// another type (so that the value can be erased).
    pub fn replace_uses_with(self, with: Value) {
        unsafe {
            let ty = LLVMTypeOf(self.0);
            let with = if LLVMTypeOf(with.0) == ty {
                with.0
            } else {
                LLVMGetPoison(ty)
            };
            LLVMReplaceAllUsesWith(self.0, with);
        }
    }

    pub fn has_uses(self) -> bool {
        unsafe { !LLVMGetFirstUse(self.0).is_null() }
    }

    pub fn users(self) -> Vec<Value> {
        // SAFETY: a live value's use list; each use names a live user.
        let uses = unsafe { walk(LLVMGetFirstUse(self.0), LLVMGetNextUse) };
        uses.into_iter()
            .map(|u| Value(unsafe { LLVMGetUser(u) }))
            .collect()
    }

    /// An instruction's metadata attachment read as integers and strings.
    pub fn metadata_items(self, kind: c_uint) -> Option<Vec<MdItem>> {
        self.metadata(kind).map(read_md_node)
    }

    /// Inlines this call site. Returns whether it was inlined.
    pub fn inline_call(self) -> bool {
        unsafe { sqtt_shim_inline_call(self.0) != 0 }
    }

    /// The address space of a pointer-typed value.
    pub fn pointer_address_space(self) -> Option<u32> {
        unsafe {
            let ty = LLVMTypeOf(self.0);
            (LLVMGetTypeKind(ty) == sys::LLVMTypeKind::LLVMPointerTypeKind)
                .then(|| LLVMGetPointerAddressSpace(ty))
        }
    }

    /// Calls `visit` on every instruction of a function, in order, without collecting them
    /// (`visit` must not erase any).
    pub fn for_each_instruction(self, mut visit: impl FnMut(Value)) {
        unsafe {
            let mut b = LLVMGetFirstBasicBlock(self.0);
            while !b.is_null() {
                let mut i = LLVMGetFirstInstruction(b);
                while !i.is_null() {
                    visit(Value(i));
                    i = LLVMGetNextInstruction(i);
                }
                b = LLVMGetNextBasicBlock(b);
            }
        }
    }

    /// Whether a global may be dropped once nothing uses it (link-once, internal, private,
    /// available-externally linkage): unused, it is dead.
    pub fn is_discardable_if_unused(self) -> bool {
        use sys::LLVMLinkage::*;
        matches!(
            unsafe { LLVMGetLinkage(self.0) },
            LLVMLinkOnceAnyLinkage
                | LLVMLinkOnceODRLinkage
                | LLVMInternalLinkage
                | LLVMPrivateLinkage
                | LLVMAvailableExternallyLinkage
        )
    }

    /// The module of a function (or other global).
    pub fn parent_module(self) -> Module {
        Module(unsafe { LLVMGetGlobalParent(self.0) })
    }

    pub fn is_phi(self) -> bool {
        unsafe { !LLVMIsAPHINode(self.0).is_null() }
    }

    pub fn is_unreachable(self) -> bool {
        self.is_instruction() && self.opcode() == sys::LLVMOpcode::LLVMUnreachable
    }

    pub fn is_return(self) -> bool {
        self.is_instruction() && self.opcode() == sys::LLVMOpcode::LLVMRet
    }

    pub fn is_atomic_rmw(self) -> bool {
        self.is_instruction() && self.opcode() == sys::LLVMOpcode::LLVMAtomicRMW
    }

    pub fn is_cmpxchg(self) -> bool {
        self.is_instruction() && self.opcode() == sys::LLVMOpcode::LLVMAtomicCmpXchg
    }

    /// Attaches metadata to a global (a function's `!name` attachment).
    pub fn set_global_metadata(self, kind: c_uint, node: LLVMMetadataRef) {
        unsafe { sys::core::LLVMGlobalSetMetadata(self.0, kind, node) }
    }

    pub fn metadata(self, kind: c_uint) -> Option<LLVMValueRef> {
        let m = unsafe { LLVMGetMetadata(self.0, kind) };
        (!m.is_null()).then_some(m)
    }

    /// Successor `i` of a terminator.
    /// A terminator's successor blocks.
    pub fn successors(self) -> Vec<Block> {
        let n = unsafe { LLVMGetNumSuccessors(self.0) };
        (0..n).map(|i| self.successor(i)).collect()
    }

    pub fn successor(self, i: u32) -> Block {
        Block(unsafe { LLVMGetSuccessor(self.0, i) })
    }

    /// Adds an incoming value to a PHI.
    pub fn add_incoming(self, v: Value, from: Block) {
        let mut vals = [v.0];
        let mut blocks = [from.0];
        unsafe { LLVMAddIncoming(self.0, vals.as_mut_ptr(), blocks.as_mut_ptr(), 1) }
    }

    /// Marks a loop latch so that the loop is never unrolled.
    pub fn disable_unroll(self) {
        unsafe { sqtt_shim_disable_unroll(self.0) }
    }

    /// Whether the value's type is `<4 x i32>` (a legacy buffer resource).
    pub fn is_v4i32(self) -> bool {
        unsafe {
            let ty = LLVMTypeOf(self.0);
            LLVMGetTypeKind(ty) == sys::LLVMTypeKind::LLVMVectorTypeKind
                && LLVMGetVectorSize(ty) == 4
                && LLVMGetTypeKind(LLVMGetElementType(ty)) == sys::LLVMTypeKind::LLVMIntegerTypeKind
                && LLVMGetIntTypeWidth(LLVMGetElementType(ty)) == 32
        }
    }

    /// Whether the value's type is an integer of this width.
    pub fn is_int_of(self, bits: u32) -> bool {
        unsafe {
            let ty = LLVMTypeOf(self.0);
            LLVMGetTypeKind(ty) == sys::LLVMTypeKind::LLVMIntegerTypeKind
                && LLVMGetIntTypeWidth(ty) == bits
        }
    }

    /// Tags an instruction with a memory model relaxation annotation `!mmra !{!"key", !"value"}`.
    /// Returns false where the LLVM has no MMRA (before 19).
    pub fn set_mmra(self, key: &str, value: &str) -> bool {
        let (k, v) = (cstr(key), cstr(value));
        unsafe { sqtt_shim_set_mmra(self.0, k.as_ptr(), v.as_ptr()) != 0 }
    }

    pub fn set_metadata(self, kind: c_uint, md: LLVMValueRef) {
        unsafe { LLVMSetMetadata(self.0, kind, md) }
    }

    /// The debug location (`!dbg`) of an instruction.
    pub fn debug_loc(self) -> Option<LLVMMetadataRef> {
        let m = unsafe { sys::debuginfo::LLVMInstructionGetDebugLoc(self.0) };
        (!m.is_null()).then_some(m)
    }

    pub fn is_alloca(self) -> bool {
        unsafe { !LLVMIsAAllocaInst(self.0).is_null() }
    }
    pub fn is_load(self) -> bool {
        unsafe { !LLVMIsALoadInst(self.0).is_null() }
    }
    pub fn is_store(self) -> bool {
        unsafe { !LLVMIsAStoreInst(self.0).is_null() }
    }
    pub fn is_fence(self) -> bool {
        unsafe { !LLVMIsAFenceInst(self.0).is_null() }
    }

    /// A fence that orders at workgroup scope or wider (a workgroup sync point).
    pub fn is_workgroup_fence(self) -> bool {
        unsafe { sqtt_shim_fence_is_workgroup_or_wider(self.0) != 0 }
    }

    /// Whether the instruction may write memory or has other side effects.
    pub fn may_have_side_effects(self) -> bool {
        if self.is_call() || self.is_store() || self.is_fence() {
            return true;
        }
        use sys::LLVMOpcode::*;
        matches!(
            self.opcode(),
            LLVMAtomicRMW | LLVMAtomicCmpXchg | LLVMInvoke | LLVMCallBr | LLVMVAArg
        )
    }

    /// Strips casts and all-zero GEPs off a pointer (constant expressions or instructions).
    pub fn strip_pointer_casts(self) -> Value {
        let mut v = self;
        for _ in 0..16 {
            unsafe {
                let is_ce = !LLVMIsAConstantExpr(v.0).is_null();
                let is_inst = !LLVMIsAInstruction(v.0).is_null();
                if !is_ce && !is_inst {
                    break;
                }
                let op = if is_ce {
                    LLVMGetConstOpcode(v.0)
                } else {
                    LLVMGetInstructionOpcode(v.0)
                };
                use sys::LLVMOpcode::*;
                match op {
                    LLVMBitCast | LLVMAddrSpaceCast => v = v.operand(0),
                    LLVMGetElementPtr => {
                        let all_zero = (1..v.num_operands()).all(|i| {
                            let idx = v.operand(i).0;
                            !LLVMIsAConstantInt(idx).is_null() && LLVMConstIntGetZExtValue(idx) == 0
                        });
                        if !all_zero {
                            break;
                        }
                        v = v.operand(0);
                    }
                    _ => break,
                }
            }
        }
        v
    }

    /// The C string held by a constant global (up to its first NUL).
    pub fn global_c_string(self) -> Option<String> {
        unsafe {
            if LLVMIsAGlobalVariable(self.0).is_null() || LLVMIsGlobalConstant(self.0) == 0 {
                return None;
            }
            let init = LLVMGetInitializer(self.0);
            if init.is_null() || LLVMIsAConstantDataSequential(init).is_null() {
                return None;
            }
            let mut len = 0usize;
            let p = LLVMGetAsString(init, &mut len);
            let s = string_of(p, len);
            Some(s.split('\0').next().unwrap_or("").to_string())
        }
    }

    pub fn const_int_value(self) -> Option<u64> {
        unsafe { (!LLVMIsAConstantInt(self.0).is_null()).then(|| LLVMConstIntGetZExtValue(self.0)) }
    }

    pub fn type_of(self) -> Type {
        Type(unsafe { LLVMTypeOf(self.0) })
    }

    /// Splits the block before this instruction; returns the new block starting here.
    pub fn split_block_before(self, name: &str) -> Block {
        let c = cstr(name);
        Block(unsafe { sqtt_shim_split_block(self.0, c.as_ptr()) })
    }
}

impl Block {
    pub fn instructions(self) -> Vec<Value> {
        // SAFETY: a live block's instruction list.
        let list = unsafe { walk(LLVMGetFirstInstruction(self.0), LLVMGetNextInstruction) };
        list.into_iter().map(Value).collect()
    }

    pub fn terminator(self) -> Option<Value> {
        let t = unsafe { LLVMGetBasicBlockTerminator(self.0) };
        (!t.is_null()).then_some(Value(t))
    }

    /// The first point after PHIs and allocas.
    pub fn first_insertion_point(self) -> Option<Value> {
        let v = unsafe { sqtt_shim_first_insertion_point(self.0) };
        (!v.is_null()).then_some(Value(v))
    }
}

/// An IR builder; disposed on drop.
pub struct Builder(LLVMBuilderRef);

impl Drop for Builder {
    fn drop(&mut self) {
        unsafe { LLVMDisposeBuilder(self.0) }
    }
}

impl Builder {
    pub fn position_before(&self, inst: Value) {
        unsafe { LLVMPositionBuilderBefore(self.0, inst.0) }
    }

    /// The block the builder inserts into.
    pub fn insertion_block(&self) -> Block {
        Block(unsafe { LLVMGetInsertBlock(self.0) })
    }

    /// The debug location given to new instructions.
    pub fn debug_loc(&self) -> Option<LLVMMetadataRef> {
        let l = unsafe { LLVMGetCurrentDebugLocation2(self.0) };
        (!l.is_null()).then_some(l)
    }

    pub fn position_at_end(&self, b: Block) {
        unsafe { LLVMPositionBuilderAtEnd(self.0, b.0) }
    }

    /// Gives the instructions built next this debug location (or none).
    pub fn set_debug_loc(&self, loc: Option<LLVMMetadataRef>) {
        unsafe { LLVMSetCurrentDebugLocation2(self.0, loc.unwrap_or(std::ptr::null_mut())) }
    }

    pub fn call(&self, fn_ty: Type, callee: Value, args: &[Value]) -> Value {
        let mut a: Vec<LLVMValueRef> = args.iter().map(|v| v.0).collect();
        Value(unsafe {
            LLVMBuildCall2(
                self.0,
                fn_ty.0,
                callee.0,
                a.as_mut_ptr(),
                a.len() as c_uint,
                c"".as_ptr(),
            )
        })
    }

    /// `fence syncscope(scope) acq_rel`.
    pub fn scoped_fence(&self, scope: &str) -> Value {
        let c = cstr(scope);
        Value(unsafe { sqtt_shim_build_scoped_fence(self.0, c.as_ptr()) })
    }

    pub fn br(&self, dest: Block) -> Value {
        Value(unsafe { LLVMBuildBr(self.0, dest.0) })
    }

    pub fn cond_br(&self, cond: Value, then: Block, els: Block) -> Value {
        Value(unsafe { LLVMBuildCondBr(self.0, cond.0, then.0, els.0) })
    }

    pub fn and(&self, a: Value, b: Value) -> Value {
        Value(unsafe { LLVMBuildAnd(self.0, a.0, b.0, c"".as_ptr()) })
    }

    pub fn or(&self, a: Value, b: Value) -> Value {
        Value(unsafe { LLVMBuildOr(self.0, a.0, b.0, c"".as_ptr()) })
    }

    pub fn lshr(&self, a: Value, b: Value) -> Value {
        Value(unsafe { LLVMBuildLShr(self.0, a.0, b.0, c"".as_ptr()) })
    }

    pub fn shl(&self, a: Value, b: Value) -> Value {
        Value(unsafe { LLVMBuildShl(self.0, a.0, b.0, c"".as_ptr()) })
    }

    pub fn icmp_ne(&self, a: Value, b: Value) -> Value {
        Value(unsafe {
            LLVMBuildICmp(
                self.0,
                sys::LLVMIntPredicate::LLVMIntNE,
                a.0,
                b.0,
                c"".as_ptr(),
            )
        })
    }

    pub fn phi(&self, ty: Type) -> Value {
        Value(unsafe { LLVMBuildPhi(self.0, ty.0, c"".as_ptr()) })
    }

    pub fn add(&self, a: Value, b: Value) -> Value {
        Value(unsafe { LLVMBuildAdd(self.0, a.0, b.0, c"".as_ptr()) })
    }

    pub fn icmp_ult(&self, a: Value, b: Value) -> Value {
        Value(unsafe {
            LLVMBuildICmp(
                self.0,
                sys::LLVMIntPredicate::LLVMIntULT,
                a.0,
                b.0,
                c"".as_ptr(),
            )
        })
    }

    pub fn extract_element(&self, v: Value, index: Value) -> Value {
        Value(unsafe { LLVMBuildExtractElement(self.0, v.0, index.0, c"".as_ptr()) })
    }

    pub fn ptr_to_int(&self, v: Value, ty: Type) -> Value {
        Value(unsafe { LLVMBuildPtrToInt(self.0, v.0, ty.0, c"".as_ptr()) })
    }

    pub fn trunc(&self, v: Value, ty: Type) -> Value {
        Value(unsafe { LLVMBuildTrunc(self.0, v.0, ty.0, c"".as_ptr()) })
    }

    pub fn zext_or_bitcast(&self, v: Value, ty: Type) -> Value {
        Value(unsafe { LLVMBuildZExtOrBitCast(self.0, v.0, ty.0, c"".as_ptr()) })
    }
}

pub fn const_i64(m: Module, v: u64) -> Value {
    const_int(m.i64(), v)
}

pub fn const_int(ty: Type, v: u64) -> Value {
    Value(unsafe { LLVMConstInt(ty.0, v, 0) })
}

/// Appends a new empty block to a function, placed after `after`.
pub fn insert_block_after(after: Block, name: &str) -> Block {
    let c = cstr(name);
    unsafe {
        let ctx = LLVMGetTypeContext(LLVMTypeOf(LLVMBasicBlockAsValue(after.0)));
        let next = LLVMGetNextBasicBlock(after.0);
        if next.is_null() {
            let f = LLVMGetBasicBlockParent(after.0);
            Block(LLVMAppendBasicBlockInContext(ctx, f, c.as_ptr()))
        } else {
            Block(LLVMInsertBasicBlockInContext(ctx, next, c.as_ptr()))
        }
    }
}

/// Line of a debug location.
pub fn debug_loc_line(loc: LLVMMetadataRef) -> u32 {
    unsafe { sys::debuginfo::LLVMDILocationGetLine(loc) }
}

/// File name of a debug location's or subprogram's scope.
pub fn di_file_name(scope_or_loc: LLVMMetadataRef, is_location: bool) -> String {
    unsafe {
        let scope = if is_location {
            sys::debuginfo::LLVMDILocationGetScope(scope_or_loc)
        } else {
            scope_or_loc
        };
        let file = sys::debuginfo::LLVMDIScopeGetFile(scope);
        if file.is_null() {
            return String::new();
        }
        let mut len = 0u32;
        let p = sys::debuginfo::LLVMDIFileGetFilename(file, &mut len);
        string_of(p, len as usize)
    }
}

/// Line of a subprogram.
pub fn subprogram_line(sp: LLVMMetadataRef) -> u32 {
    unsafe { sys::debuginfo::LLVMDISubprogramGetLine(sp) }
}

/// The location a debug location was inlined at.
pub fn debug_loc_inlined_at(loc: LLVMMetadataRef) -> Option<LLVMMetadataRef> {
    let m = unsafe { sys::debuginfo::LLVMDILocationGetInlinedAt(loc) };
    (!m.is_null()).then_some(m)
}
