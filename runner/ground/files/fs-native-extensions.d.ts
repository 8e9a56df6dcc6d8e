// Types for fs-native-extensions, which ships none: the two calls files/host-lock.ts makes.
declare module "fs-native-extensions" {
  /**
   * Takes a lock on the whole file at once or not at all (on Linux an open
   * file description lock, F_OFD_SETLK): true when taken, false when held
   * the other way; throws on any other error (EBADF: an exclusive lock needs
   * a descriptor open for writing).
   */
  export function tryLock(fd: number, options?: { shared?: boolean }): boolean;
  /** Drops the lock the descriptor holds. */
  export function unlock(fd: number): void;
}
