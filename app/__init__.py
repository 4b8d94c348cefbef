"""The playground's Gradio UI. UI only: every computation is an engine call."""
