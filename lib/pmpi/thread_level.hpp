// The thread level: what the program asked MPI for, and what the preload asks in its place.
//
// Served non-blocking calls run on a progress thread (requests.hpp). Below
// MPI_THREAD_MULTIPLE that thread makes no MPI call at all (plan.hpp, in_background), so the
// preload leaves the level as the program asked by default: every level above
// MPI_THREAD_SINGLE costs each of the program's own MPI calls under Open MPI 4.1 (1.1-1.5x on a
// small message, docs/preload.md). TOROID_THREAD_LEVEL asks for MPI_THREAD_FUNNELED (the level
// that admits a second thread, strictly) or MPI_THREAD_MULTIPLE (the thread may then call MPI,
// so calls are served across nodes too) instead, at that cost (settings.hpp). The program still
// sees the level it asked for, from `provided` and from MPI_Query_thread; toroid's own calls see
// MPI's.
#pragma once

namespace toroid::pmpi {

// MPI's initialization with the level raised as above; `provided` gets the program's view. With
// nothing to raise it is the program's own call (`plain`: MPI_Init, whose level MPI's defaults
// decide), and the program sees what MPI gives; raised, MPI's level but no more than `required`
// (MPI_THREAD_SINGLE for MPI_Init).
int init_thread(int* argc, char*** argv, int required, bool plain, int* provided) noexcept;

// The level the program is told (MPI_Query_thread outside toroid); false before init_thread.
bool program_level(int& level) noexcept;

// Right after MPI_Init (collective over MPI_COMM_WORLD): the lowest level MPI gave any rank of
// the job. The serve decision of a non-blocking call depends on the level, and must be alike on
// every rank, which a program that initializes its ranks differently would break otherwise.
void agree_on_thread_level() noexcept;
// That lowest level; this rank's own before (or without) the agreement.
int job_thread_level() noexcept;

}  // namespace toroid::pmpi
