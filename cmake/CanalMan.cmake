# Man pages, generated at build time from the public headers' comment blocks
# (scripts/gen-man.py): build/man/man3/<function>.3 and build/man/man7/canal.7,
# installed into share/man. Any header added to include/canal/ is picked up
# (CONFIGURE_DEPENDS re-globs at build time).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
file(GLOB CANAL_PUBLIC_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/canal/*.h)
set(CANAL_MAN_DIR ${CMAKE_BINARY_DIR}/man)
add_custom_command(
  OUTPUT ${CANAL_MAN_DIR}/man7/canal.7
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/gen-man.py
          --out ${CANAL_MAN_DIR} --version ${PROJECT_VERSION} ${CANAL_PUBLIC_HEADERS}
  COMMAND ${CMAKE_COMMAND} -E touch ${CANAL_MAN_DIR}/man7/canal.7
  DEPENDS ${PROJECT_SOURCE_DIR}/scripts/gen-man.py ${CANAL_PUBLIC_HEADERS}
  COMMENT "Generating man pages from include/canal/*.h"
  VERBATIM)
add_custom_target(canal_man ALL DEPENDS ${CANAL_MAN_DIR}/man7/canal.7)
install(DIRECTORY ${CANAL_MAN_DIR}/ DESTINATION ${CMAKE_INSTALL_MANDIR}
  FILES_MATCHING PATTERN "*.3" PATTERN "*.7")

# Every function exported by libcanal.so has a page, and every page renders
# without a warning (groff -ww), see tests/check-man.py.
add_test(NAME man_pages
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/check-man.py
          $<TARGET_FILE:canal> ${CANAL_MAN_DIR})
set_tests_properties(man_pages PROPERTIES LABELS "unit" TIMEOUT 120)
