/**
 * Which OCI runtime a box runs under (whether the engine has it is
 * runtime-check.ts). runc is the engine's own default and always there;
 * anything else (runsc, gVisor's user-space kernel) must be registered with
 * dockerd first. A box asked to run
 * under a runtime the engine does not list is refused before it is created:
 * falling back to runc would hand the box the host's kernel that org.toml
 * asked to keep from it.
 */

/** The engine's default runtime: a box spec without one gets it. */
export const DEFAULT_RUNTIME = "runc";

/**
 * The runsc flags the door needs. `--host-uds=open`: gVisor refuses connect()
 * on a host Unix socket otherwise (EPERM), and the door is one. `--network=none`:
 * a box has no network, and without the flag runsc refuses to start in the
 * root network namespace Docker's `--network none` leaves it.
 */
export const RUNSC_ARGS = ["--host-uds=open", "--network=none"] as const;

/**
 * Under runsc the container's pids cgroup holds gVisor's own host threads, not
 * the box's processes: ~40 for an idle sandbox, and 6 to 8 more for each
 * process in the box (Debian's runsc uses the ptrace platform: a host stub per
 * address space, threads for each task). A box given runc's number gets a
 * tenth of the processes, and at the limit the sandbox itself dies (it cannot
 * make a thread) before a fork in the box fails. So the cgroup's limit is
 * scaled to give the box about the processes `pids_limit` says, still bounded.
 */
const RUNSC_HOST_PIDS_PER_PROCESS = 8;
const RUNSC_SANDBOX_PIDS = 64;

/** The engine's pids limit for a box that may run `pids` processes under `runtime`. */
export function hostPidsLimit(runtime: string | undefined, pids: number): number {
  return runtime === "runsc" ? pids * RUNSC_HOST_PIDS_PER_PROCESS + RUNSC_SANDBOX_PIDS : pids;
}
