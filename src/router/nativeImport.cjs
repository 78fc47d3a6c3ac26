// Node's own `import()`, in a CommonJS module loaded with `require`: test runners rewrite
// `import()` in the ES modules they transform, but never touch a required file, so route files
// always load through Node's loader and Foundry's module hooks, as in production.
exports.nativeImport = (specifier) => import(specifier)
