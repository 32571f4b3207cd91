//! A minimal AMDGPU-flagged ELF holding a `.sqtt_funcmap` section, for the simulator and the
//! benchmark (both make code objects for generated traces).

/// An ELF file whose only content is `bytes` in `.sqtt_funcmap`, marked EM_AMDGPU.
pub fn elf_with_funcmap(bytes: &[u8]) -> Vec<u8> {
    use object::write::Object;
    use object::{Architecture, BinaryFormat, Endianness, SectionKind};
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let id = obj.add_section(Vec::new(), b".sqtt_funcmap".to_vec(), SectionKind::Other);
    obj.append_section_data(id, bytes, 1);
    let mut elf = obj.write().expect("elf");
    // object writes no AMDGPU ELF: mark it as one (e_machine EM_AMDGPU).
    elf[18..20].copy_from_slice(&0xE0u16.to_le_bytes());
    elf
}
