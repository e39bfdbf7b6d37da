# Installs the graph renderer with npm ci (versions from package-lock.json) and copies the one file
# the panel serves, with its licence. A failure is a warning: the panel works without the renderer.
file(MAKE_DIRECTORY ${WORK} ${VENDOR})
configure_file(${SOURCE}/package.json ${WORK}/package.json COPYONLY)
configure_file(${SOURCE}/package-lock.json ${WORK}/package-lock.json COPYONLY)
execute_process(COMMAND ${NPM} ci --no-audit --no-fund --loglevel=error
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE result OUTPUT_QUIET ERROR_VARIABLE error)
set(dist ${WORK}/node_modules/cytoscape/dist/cytoscape.min.js)
if(result EQUAL 0 AND EXISTS ${dist})
  file(COPY_FILE ${dist} ${VENDOR}/cytoscape.min.js)
  file(COPY_FILE ${WORK}/node_modules/cytoscape/LICENSE ${VENDOR}/cytoscape.LICENSE)
else()
  message(WARNING "npm ci for the web panel failed (${result}): ${error}\nThe panel will work without its graph canvas.")
  file(WRITE ${VENDOR}/cytoscape.min.js "/* the graph renderer could not be installed (npm ci failed); see the build log */\n")
endif()
