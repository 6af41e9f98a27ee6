// Test helpers shared with other packages.
export {};
