/** One contract, two stores: every case runs against a temp folder and against Ceph's S3 gateway. */
import { objectStoreContract } from "../src/testing.ts";
import { storeKinds } from "./stores.ts";

for (const { name, make } of storeKinds) objectStoreContract(name, make);
