/** wrangler's CompiledWasm rule: importing a .wasm file gives the compiled module. */
declare module "*.wasm" {
  const module: WebAssembly.Module;
  export default module;
}
