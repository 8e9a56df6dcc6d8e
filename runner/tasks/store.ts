/**
 * The task list itself lives in task-list/, below the runs that read it;
 * it is handed on here for the importers that still name this path.
 */
export * from "../task-list/store.ts";
