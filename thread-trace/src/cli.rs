use anyhow::Result;
