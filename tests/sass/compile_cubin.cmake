# Compiles SOURCE to CUBIN with NVCC and FLAGS, writing ptxas -v's report to
# LOG (nvcc prints it on stderr).
execute_process(COMMAND ${NVCC} ${FLAGS} -D${DEFINE} ${SOURCE} -o ${CUBIN}
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
file(WRITE ${LOG} "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc failed on ${SOURCE} (-D${DEFINE}):\n${err}")
endif()
