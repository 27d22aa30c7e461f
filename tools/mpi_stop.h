// How `mpirun -np N pipewright run ...` stops on a signal: the contract, and the two things the
// ranks do differently when mpirun itself is tearing the job down.
//
// What Open MPI 4.1's mpirun does (orterun(1) "Signal Propagation", measured with 4.1.4 on
// Debian 12):
//  - SIGINT or SIGTERM to mpirun: it sends SIGCONT then SIGTERM to every rank (SIGTERM for
//    both: the ranks cannot tell which one mpirun got), SIGKILLs the ranks still alive about
//    2 s later (MCA odls_base_sigkill_timeout, default 1), stops forwarding the ranks' stdout
//    and stderr at once (a 200 kB write arrived cut at 12,288 bytes; a rank waiting for its pipe
//    to drain never saw it drain), and exits 1 whatever the ranks exit with (mpirun's own
//    abort status). MPI_Finalize in a rank blocks until the SIGKILL.
//  - SIGUSR1 / SIGUSR2 to mpirun: forwarded to every rank; nothing else (no kill, output still
//    forwarded, the exit status is the ranks').
//  - A signal to one rank reaches that rank only. Each rank has its own process group, so a
//    terminal's Ctrl-C reaches mpirun alone.
//
// The contract:
//  - SIGINT / SIGTERM to any one rank, or SIGUSR1 / SIGUSR2 to mpirun (or to a rank): every
//    rank stops at the same step boundary (the per-step agreement carries the largest signal
//    number, exec/runtime/run_ranks.h), writes the checkpoint (--checkpoint: rank 0 writes the
//    directory), rank 0 prints the complete summary (--json: the whole document) and commits
//    the output files, prints the one line "pipewright: stopped by SIG... after step K of N;
//    ..." and every rank exits 128 + that signal (130, 143, 138, 140), so mpirun does too.
//  - SIGINT / SIGTERM to mpirun: the ranks see mpirun's SIGTERM come from their parent
//    (tools/signals.h) and agree that the launcher is tearing the job down. They stop at the
//    next step boundary as above, but rank 0 writes the summary and its line to mpirun's own
//    stdout and stderr instead of the pipes mpirun no longer reads (the same open files, taken
//    with pidfd_getfd, so that writes to a regular file share mpirun's offset and neither
//    overwrites the other; else /proc/<parent>/fd/1 and 2 opened again for appending); the
//    other ranks wait in a barrier until rank 0 is done (mpirun would kill rank 0 as soon as
//    one of them exits), then every rank leaves with _exit (no MPI_Finalize, which would wait
//    for the SIGKILL). The line says SIGTERM (what the ranks got). mpirun exits 1: its own
//    status, not the ranks'. All of it must fit in the 1 s between mpirun's SIGTERM and its
//    SIGKILL: the rest of the step, the checkpoint and the outputs (about 0.1-0.2 s for the
//    tests' model on a loaded 2-core machine); a longer step is killed, leaving the previous
//    checkpoint (--checkpoint-every) and at most the temporaries of the files being written.
//    Jobs with long steps: stop them with SIGUSR1 to mpirun, or give the ranks more time with
//    `mpirun --mca odls_base_sigkill_timeout SECONDS`. A progress line written just before
//    the stop may come out after the stop line (mpirun forwards it late, or not at all).
//    The rank that prints must be mpirun's child (rank 0 runs on mpirun's host, as Open MPI
//    places it by default); under an orted its parent's streams are the orted's.
#pragma once

namespace pw::tools {

// Points this process's stdout and stderr at its parent's (mpirun's) stdout and stderr (see
// above); a stream that cannot be had stays as it is. Flushes both first, and waits at most
// 100 ms each for mpirun to read what is still in the pipes.
void write_to_launcher_streams();

// Flushes stdout and stderr and ends the process with `code` at once: no destructors, no
// MPI_Finalize.
[[noreturn]] void exit_without_finalize(int code);

}  // namespace pw::tools
