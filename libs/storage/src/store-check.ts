/**
 * `checkStore`: before a command does any work, proof that its store can hold runs — for a
 * folder: not a kernel file system (/proc, /sys…: Node's recursive mkdir never settles under
 * /proc), not a file, nor under one, there or makeable, and writable; for S3: credentials found and
 * a probe object written and deleted. A failure is one `StoreError` line that names the store.
 */
import type { ObjectStore } from "./object-store.ts";
import { errorMessage } from "./retry.ts";

export class StoreError extends Error {
  constructor(
    readonly storeUri: string,
    detail: string,
  ) {
    super(`store ${storeUri}: ${detail}`);
    this.name = "StoreError";
  }
}

export interface StoreCheckOptions {
  /** Also prove that objects can be written (default true); false for commands that only read. */
  readonly write?: boolean;
}

/** A store that can check itself (FileStore, S3Store). */
export interface CheckableStore extends ObjectStore {
  check(options?: StoreCheckOptions): Promise<void>;
}

const isCheckable = (store: ObjectStore): store is CheckableStore =>
  typeof (store as Partial<CheckableStore>).check === "function";

/**
 * Runs the store's own check (stores without one pass). Every failure is a StoreError whose
 * message is one line: `store <uri>: <what is wrong>`.
 */
export async function checkStore(store: ObjectStore, options: StoreCheckOptions = {}): Promise<void> {
  if (!isCheckable(store)) return;
  try {
    await store.check(options);
  } catch (error) {
    if (error instanceof StoreError) throw error;
    throw new StoreError(store.uri, firstLine(errorMessage(error)));
  }
}

export function firstLine(text: string): string {
  return text.split("\n", 1)[0]!.trim();
}
