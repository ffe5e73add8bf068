// Registered first, so it runs after the test file's own afterAll hooks (vitest runs them as a
// stack): the hosts and services that use the scratch directories have stopped by then.
import { afterAll } from "vitest";
import { removeScratch } from "./scratch";

afterAll(removeScratch);
