# The NVML (GPU) collector, included from CMakeLists.txt. Needs no CUDA toolkit: libnvidia-ml is
# dlopen()ed at run time.
add_library(titan_collector_nvml
  frozen_counter.cc
  nvml_background.cc
  nvml_collector.cc
  nvml_loader.cc
  nvml_signals.cc
)
target_link_libraries(titan_collector_nvml PUBLIC titan_metrics PRIVATE ${CMAKE_DL_LIBS})

# nvml_probe: prints every GPU signal for a few samples (bench/gpu_check.sh runs it on GPU hosts).
add_executable(nvml_probe nvml_probe.cc)
target_link_libraries(nvml_probe PRIVATE titan_collector_nvml)

# The fake libnvidia-ml.so.1 (test double for GPUs, see nvml/fake_nvml.cc), in three variants,
# each in its own directory under its real file name.
foreach(variant full minimal broken)
  set(target titan_fake_nvml_${variant})
  add_library(${target} SHARED nvml/fake_nvml.cc)
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME nvidia-ml SUFFIX ".so.1" NO_SONAME ON
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fake_nvml/${variant})
endforeach()
target_compile_definitions(titan_fake_nvml_minimal PRIVATE FAKE_NVML_MINIMAL)
target_compile_definitions(titan_fake_nvml_broken PRIVATE FAKE_NVML_NO_COUNT)

titan_test(nvml_collector_test SRCS nvml_collector_test.cc DEPS titan_collector_nvml ${CMAKE_DL_LIBS})
add_dependencies(nvml_collector_test
  titan_fake_nvml_full titan_fake_nvml_minimal titan_fake_nvml_broken)
target_compile_definitions(nvml_collector_test PRIVATE
  TITAN_FAKE_NVML_FULL="$<TARGET_FILE:titan_fake_nvml_full>"
  TITAN_FAKE_NVML_MINIMAL="$<TARGET_FILE:titan_fake_nvml_minimal>"
  TITAN_FAKE_NVML_BROKEN="$<TARGET_FILE:titan_fake_nvml_broken>")
