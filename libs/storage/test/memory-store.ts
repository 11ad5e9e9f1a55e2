/**
 * An ObjectStore in a Map, for tests: the interface's promises and nothing more (no `listFolders`,
 * so the helpers take their fallback paths). Keys are checked as every store checks them.
 */
import { checkKey, ObjectNotFoundError, type ObjectStore } from "../src/object-store.ts";

export function memoryStore(keys: readonly string[] = []): ObjectStore {
  const uri = "mem://test";
  const objects = new Map<string, Uint8Array>(keys.map((k) => [k, new TextEncoder().encode(k)]));
  return {
    uri,
    async get(key) {
      const bytes = objects.get(checkKey(key));
      if (bytes === undefined) throw new ObjectNotFoundError(key, uri);
      return bytes.slice();
    },
    async put(key, body) {
      objects.set(checkKey(key), body.slice());
    },
    async putIfAbsent(key, body) {
      if (objects.has(checkKey(key))) return false;
      objects.set(key, body.slice());
      return true;
    },
    async list(prefix) {
      return [...objects]
        .filter(([k]) => k.startsWith(prefix))
        .map(([key, b]) => ({ key, size: b.byteLength }))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    },
    async delete(key) {
      objects.delete(checkKey(key));
    },
    async head(key) {
      const b = objects.get(checkKey(key));
      return b === undefined ? undefined : { key, size: b.byteLength };
    },
  };
}
