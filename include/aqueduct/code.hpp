// aqueduct/code.hpp — the code layer: code objects (ELF, metadata), offload bundles and CCOB,
// ISA selection, loading. code/decompress.hpp (included through fat_binary.hpp) uses libzstd and
// zlib, which the aqueduct::aqueduct target and aqueduct.pc link (-lzstd -lz).
#pragma once

#include <aqueduct/code/bundle.hpp>
#include <aqueduct/code/decompress.hpp>
#include <aqueduct/code/elf.hpp>
#include <aqueduct/code/fat_binary.hpp>
#include <aqueduct/code/isa.hpp>
#include <aqueduct/code/loader.hpp>
#include <aqueduct/code/metadata.hpp>
#include <aqueduct/code/target_id.hpp>
