/** Whether a process exists (EPERM: it does, it just isn't ours): how a pid file or a lock file tells a live owner from a dead one. */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
