"""Tofino 1 (one pipe) limits the resource model checks against, each with
its public source. All figures are from the open-source Tofino back end of
p4c (Apache-2.0, p4lang/p4c, backends/tofino), which Intel published in 2024.
"""

P4C = "p4lang/p4c backends/tofino"

# MAU stages per pipe (each gress can use all of them; the stages and their
# memories are shared by ingress and egress).
STAGES = 12                      # Target::Tofino NUM_MAU_STAGES_PRIVATE = 12

# PHV containers of one pipe, shared by ingress and egress: every container is
# given to one gress (thread). bf-asm/tofino/phv.h; bf-p4c/phv/phv_spec.cpp.
PHV = {8: 64, 16: 96, 32: 64}    # normal containers: 4096 bits
TPHV = {8: 32, 16: 48, 32: 32}   # tagalong containers (parser/deparser only): 2048 bits
# Containers are handed to a gress in groups (TofinoPhvSpec deparserGroupSize):
# 8 8-bit, 8 16-bit, 4 32-bit; tagalong in collections of 4+6+4.
PHV_GROUP = {8: 8, 16: 8, 32: 4}
POV_BITS = 256                   # header validity bits (TofinoPhvSpec numPovBits)

# Per stage (bf-p4c/mau/tofino/memories.h, bf-asm/tofino constants.h,
# bf-p4c/mau/tofino/input_xbar.h).
SRAMS = 80                       # SRAM_ROWS 8 x SRAM_COLUMNS 10, each 1024 x 128 bits
SRAM_WORDS, SRAM_WIDTH = 1024, 128
SYNTH_SRAMS = 48                 # stateful, stats and meter RAMs sit on the right side: 6 columns x 8 rows
TCAMS = 24                       # TCAM_ROWS 12 x TCAM_COLUMNS 2, each 512 x 44 bits
TCAM_DEPTH, TCAM_WIDTH = 512, 44
LOGICAL_TABLES = 16              # LOGICAL_TABLES / TABLES_MAX
METER_ALUS = 4                   # stateful (register) ALUs
STATS_ALUS = 4                   # counter ALUs
HASH_DIST_SLICES = 6             # HASH_DIST_UNITS 2 x HASH_DIST_SLICES 3, 16 bits each
HASH_DIST_BITS = 16

SOURCES = [
    ("12 MAU stages", f"{P4C}/bf-asm/tofino (Target::Tofino, NUM_MAU_STAGES_PRIVATE = 12)"),
    ("PHV 64x8 + 96x16 + 64x32 normal, 32x8 + 48x16 + 32x32 tagalong",
     f"{P4C}/bf-asm/tofino/phv.h (COUNT_8BIT_PHV ...), bf-p4c/phv/phv_spec.cpp (TofinoPhvSpec)"),
    ("containers given to a gress in groups of 8/8/4", f"{P4C}/bf-p4c/phv/phv_spec.cpp (deparserGroupSize)"),
    ("80 SRAMs of 1024x128 b, 24 TCAMs of 512x44 b, 16 logical tables, 4 meter (stateful) and 4 stats ALUs per stage",
     f"{P4C}/bf-p4c/mau/tofino/memories.h"),
    ("stateful/stats RAMs on the right side (6 of 10 columns)", f"{P4C}/bf-p4c/mau/tofino/memories.h (RIGHT_SIDE_COLUMNS)"),
    ("hash distribution: 2 units x 3 slices of 16 bits per stage", f"{P4C}/bf-p4c/mau/tofino/input_xbar.h"),
]
