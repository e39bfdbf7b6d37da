# Installs the panel's third-party code with npm ci (versions from package-lock.json) and copies the
# browser builds it serves, each with its licence: the graph renderer (cytoscape), the Markdown
# renderer (markdown-it), the HTML sanitiser (DOMPurify), the code highlighter (highlight.js) and the
# diagram renderer (mermaid, loaded only when an answer holds a diagram). A failure is a warning: the
# panel works without them (no graph canvas; answers shown as plain text; code not coloured; diagrams
# shown as their source).
file(MAKE_DIRECTORY ${WORK} ${VENDOR})
configure_file(${SOURCE}/package.json ${WORK}/package.json COPYONLY)
configure_file(${SOURCE}/package-lock.json ${WORK}/package-lock.json COPYONLY)
execute_process(COMMAND ${NPM} ci --no-audit --no-fund --loglevel=error
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE result OUTPUT_QUIET ERROR_VARIABLE error)
# served name | file in node_modules | licence in node_modules
set(parts
    "cytoscape.min.js|cytoscape/dist/cytoscape.min.js|cytoscape/LICENSE"
    "markdown-it.min.js|markdown-it/dist/browser/markdown-it.umd.min.js|markdown-it/LICENSE"
    "purify.min.js|dompurify/dist/purify.min.js|dompurify/LICENSE"
    "highlight.min.js|@highlightjs/cdn-assets/highlight.min.js|@highlightjs/cdn-assets/LICENSE"
    "mermaid.min.js|mermaid/dist/mermaid.min.js|mermaid/LICENSE")
foreach(part ${parts})
  string(REPLACE "|" ";" fields "${part}")
  list(GET fields 0 served)
  list(GET fields 1 dist)
  list(GET fields 2 licence)
  string(REGEX REPLACE "[.]min[.]js$" "" stem "${served}")
  if(result EQUAL 0 AND EXISTS ${WORK}/node_modules/${dist})
    file(COPY_FILE ${WORK}/node_modules/${dist} ${VENDOR}/${served})
    file(COPY_FILE ${WORK}/node_modules/${licence} ${VENDOR}/${stem}.LICENSE)
  else()
    message(WARNING "npm ci for the web panel failed (${result}): ${error}\nThe panel will work without ${served}.")
    file(WRITE ${VENDOR}/${served} "/* ${served} could not be installed (npm ci failed); see the build log */\n")
  endif()
endforeach()
