// esbuild emits imported CSS beside the bundle (dist/webview/dashboard.css).
declare module '*.css';
