// Internal to exec/transport/'s MPI files: the communicators a World owns. Includes <mpi.h>;
// never include it outside exec/transport/.
#pragma once

#include <mpi.h>

#include "exec/transport/mpi_world.h"

namespace pw::exec::mpi {

struct World::Comms {
  MPI_Comm data = MPI_COMM_NULL;     // MpiTransport headers and payloads
  MPI_Comm control = MPI_COMM_NULL;  // abort notices
  MPI_Comm collective = MPI_COMM_NULL;
};

// Abort notices use this tag on the control communicator.
inline constexpr int kAbortTag = 1;
// ... and their acknowledgements this one.
inline constexpr int kAckTag = 2;
// World::send_bytes / recv_bytes use this tag on the collective communicator.
inline constexpr int kBytesTag = 3;

}  // namespace pw::exec::mpi
