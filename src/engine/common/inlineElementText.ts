// Script and style text placed inline in an HTML page (the report file, the
// webview pages). A <script> element ends at the first "</script" and a
// <style> at the first "</style", whatever surrounds it; "<\/" means "</" in
// every JavaScript string, template and regular expression, and CSS has that
// sequence only in strings and comments.

/** JavaScript to place between `<script>` and `</script>`. */
export function inlineScriptText(script: string): string {
  return script.replace(/<\/(script)/gi, '<\\/$1');
}

/** CSS to place between `<style>` and `</style>`. */
export function inlineStyleText(style: string): string {
  return style.replace(/<\/(style)/gi, '<\\/$1');
}
