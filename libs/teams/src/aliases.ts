/**
 * Aliases (`stable`, …): small JSON objects naming a version, with their history; `latest` is
 * implicit (the highest version with a manifest). `rollbackAlias` steps back one entry. Alias
 * writes are last-writer-wins (an ObjectStore has no compare-and-swap on replace). A ref — what a
 * caller names a version by — is `latest`, an alias, `v3` or `3` (`resolveRef`).
 */
import { decodeJson, getIfPresent, type ObjectInfo, type ObjectStore } from "@troupe/storage";
import { z } from "zod";
import { aliasesPrefix, aliasKey } from "./layout.ts";
import { checkName, checkNamed, readManifest, TeamNotFoundError, versionsOf } from "./versions.ts";

export interface AliasHistoryEntry {
  readonly version: number;
  readonly at: string;
}

const AliasNameSchema = z
  .string()
  .regex(
    /^[a-z][a-z0-9._-]{0,63}$/,
    "an alias is 1–64 characters of a-z, 0-9, '.', '_', '-', starting with a letter",
  )
  .refine((a) => a !== "latest", '"latest" is implicit (the highest version) and cannot be set')
  .refine((a) => !/^v\d+$/.test(a), "an alias cannot look like a version (v3)");

const AliasDocSchema = z.strictObject({
  schemaVersion: z.literal(1),
  alias: z.string(),
  version: z.number().int().min(1),
  history: z.array(z.strictObject({ version: z.number().int().min(1), at: z.string() })).min(1),
});
type AliasDoc = z.infer<typeof AliasDocSchema>;

const utf8 = new TextEncoder();
/** A small JSON document as the registry writes it (claims, aliases): indented, newline-terminated. */
export const jsonBytes = (value: unknown) => utf8.encode(`${JSON.stringify(value, null, 2)}\n`);

/** The alias if it is a valid alias name; else an error naming what is wrong. */
export const checkAlias = (alias: string): string => checkNamed(AliasNameSchema, "alias", alias);

export async function readAlias(
  store: ObjectStore,
  name: string,
  alias: string,
): Promise<AliasDoc | undefined> {
  const key = aliasKey(name, alias);
  const bytes = await getIfPresent(store, key);
  return bytes && decodeJson(bytes, key, "alias", AliasDocSchema);
}

/** The team's stored aliases (not `latest`). */
export async function aliasNames(store: ObjectStore, name: string): Promise<string[]> {
  const prefix = aliasesPrefix(name);
  return (await store.list(prefix))
    .map((o: ObjectInfo) => o.key.slice(prefix.length))
    .filter((rest) => rest.endsWith(".json") && !rest.includes("/"))
    .map((rest) => rest.slice(0, -".json".length));
}

/** The version a ref names; TeamNotFoundError naming the versions or aliases there are. */
export async function resolveRef(store: ObjectStore, name: string, ref: string): Promise<number> {
  const { published } = await versionsOf(store, checkName(name));
  if (published.length === 0) throw new TeamNotFoundError(`team "${name}" not found`);
  if (ref === "latest") return published.at(-1)!;
  const numeric = /^v?(\d+)$/.exec(ref);
  if (numeric) {
    const version = Number(numeric[1]);
    if (!published.includes(version)) {
      throw new TeamNotFoundError(
        `team "${name}" has no version ${version} (versions: ${published.join(", ")})`,
      );
    }
    return version;
  }
  const doc = AliasNameSchema.safeParse(ref).success ? await readAlias(store, name, ref) : undefined;
  if (doc === undefined) {
    const known = await aliasNames(store, name);
    throw new TeamNotFoundError(
      `team "${name}" has no alias "${ref}" (aliases: latest${known.map((a) => `, ${a}`).join("")})`,
    );
  }
  return doc.version;
}

async function writeAlias(
  store: ObjectStore,
  name: string,
  alias: string,
  version: number,
  history: AliasHistoryEntry[],
): Promise<void> {
  const doc: AliasDoc = { schemaVersion: 1, alias, version, history };
  await store.put(aliasKey(name, alias), jsonBytes(doc));
}

/** Points the alias at a published version (a no-op when it already does). */
export async function setAlias(
  store: ObjectStore,
  name: string,
  alias: string,
  version: number,
): Promise<void> {
  checkAlias(alias);
  await readManifest(store, checkName(name), version); // the version must exist
  const doc = await readAlias(store, name, alias);
  if (doc?.version === version) return;
  await writeAlias(store, name, alias, version, [
    ...(doc?.history ?? []),
    { version, at: new Date().toISOString() },
  ]);
}

/** Moves the alias back to its previous version and returns that version. */
export async function rollbackAlias(store: ObjectStore, name: string, alias: string): Promise<number> {
  checkAlias(alias);
  const doc = await readAlias(store, checkName(name), alias);
  if (doc === undefined) throw new TeamNotFoundError(`team "${name}" has no alias "${alias}"`);
  if (doc.history.length < 2) {
    throw new Error(`alias "${alias}" of team "${name}" has no earlier version to roll back to`);
  }
  const history = doc.history.slice(0, -1);
  const previous = history.at(-1)!.version;
  await writeAlias(store, name, alias, previous, history);
  return previous;
}

/** An alias's versions, oldest first; the last entry is the current one. */
export async function aliasHistory(
  store: ObjectStore,
  name: string,
  alias: string,
): Promise<AliasHistoryEntry[]> {
  const doc = await readAlias(store, checkName(name), checkAlias(alias));
  if (doc === undefined) throw new TeamNotFoundError(`team "${name}" has no alias "${alias}"`);
  return doc.history;
}
