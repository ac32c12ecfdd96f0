// The Catch2 main, compiled once for every test executable (it is the costliest TU to build).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
