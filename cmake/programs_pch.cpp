// The precompiled header of the test command's programs (CMakeLists.txt: zklock_programs_pch).
