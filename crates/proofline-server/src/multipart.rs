//! `multipart/form-data` bodies (RFC 7578), parsed from the buffered body: each part's name,
//! file name and the byte range of its content. Parts are not copied; the caller slices what it
//! keeps.

use std::ops::Range;

/// One part of a form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The `name` of its `Content-Disposition`.
    pub name: String,
    /// The `filename`, for file parts.
    pub filename: Option<String>,
    /// Where its content is in the body.
    pub range: Range<usize>,
}

/// The boundary of a `multipart/form-data` content type, or `None` for any other type.
pub fn boundary(content_type: &str) -> Option<String> {
    let mut params = content_type.split(';');
    let mime = params.next()?.trim();
    if !mime.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| unquote(v.trim()).to_string())
            .filter(|b| !b.is_empty())
    })
}

fn unquote(v: &str) -> &str {
    v.strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(v)
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    memchr::memmem::find(hay.get(from..)?, needle).map(|i| i + from)
}

/// The parts of `body`; `Err` says what is malformed.
pub fn parse(body: &[u8], boundary: &str) -> Result<Vec<Part>, String> {
    let delimiter = format!("--{boundary}");
    let next_part = format!("\r\n--{boundary}");
    let mut at = find(body, delimiter.as_bytes(), 0)
        .ok_or("the body does not contain the multipart boundary")?
        + delimiter.len();
    let mut parts = Vec::new();
    loop {
        match body.get(at..at + 2) {
            Some(b"--") => return Ok(parts),
            Some(b"\r\n") => at += 2,
            _ => return Err("a multipart boundary is not followed by CRLF or --".into()),
        }
        let head_end = find(body, b"\r\n\r\n", at).ok_or("a part has no end of headers")?;
        let head = std::str::from_utf8(&body[at..head_end])
            .map_err(|_| "part headers are not UTF-8".to_string())?;
        let (name, filename) = disposition(head)?;
        let start = head_end + 4;
        let end = find(body, next_part.as_bytes(), start)
            .ok_or("a part is not closed by the boundary")?;
        parts.push(Part {
            name,
            filename,
            range: start..end,
        });
        at = end + next_part.len();
    }
}

/// The name and file name of a part's `Content-Disposition: form-data; name="..."` header.
fn disposition(head: &str) -> Result<(String, Option<String>), String> {
    let value = head
        .split("\r\n")
        .find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-disposition")
                .then_some(v)
        })
        .ok_or("a part has no Content-Disposition header")?;
    let mut name = None;
    let mut filename = None;
    for p in value.split(';').skip(1) {
        if let Some((k, v)) = p.split_once('=') {
            let v = unquote(v.trim()).to_string();
            match k.trim().to_ascii_lowercase().as_str() {
                "name" => name = Some(v),
                "filename" => filename = Some(v),
                _ => {}
            }
        }
    }
    Ok((
        name.ok_or("a part's Content-Disposition has no name")?,
        filename,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CT: &str = "multipart/form-data; boundary=------------------------abc123";

    fn body() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"preamble\r\n--------------------------abc123\r\n");
        b.extend_from_slice(b"Content-Disposition: form-data; name=\"sector_id\"\r\n\r\n42\r\n");
        b.extend_from_slice(b"--------------------------abc123\r\n");
        b.extend_from_slice(
            b"Content-Disposition: form-data; name=\"file\"; filename=\"c1.json\"\r\n\
              Content-Type: application/octet-stream\r\n\r\n",
        );
        b.extend_from_slice(b"{\"a\":\r\n--x}\x00\xff");
        b.extend_from_slice(b"\r\n--------------------------abc123--\r\n");
        b
    }

    #[test]
    fn parses_fields_and_files() {
        let b = boundary(CT).unwrap();
        assert_eq!(b, "------------------------abc123");
        let body = body();
        let parts = parse(&body, &b).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "sector_id");
        assert_eq!(&body[parts[0].range.clone()], b"42");
        assert_eq!(parts[1].filename.as_deref(), Some("c1.json"));
        assert_eq!(&body[parts[1].range.clone()], b"{\"a\":\r\n--x}\x00\xff");
    }

    #[test]
    fn other_types_and_malformed_bodies() {
        assert_eq!(boundary("application/octet-stream"), None);
        assert_eq!(boundary("multipart/form-data"), None);
        assert_eq!(
            boundary("Multipart/Form-Data; charset=utf-8; boundary=\"q r\"").as_deref(),
            Some("q r")
        );
        let b = "------------------------abc123";
        assert!(parse(b"no boundary here", b).is_err());
        let mut truncated = body();
        truncated.truncate(truncated.len() - 40);
        assert!(parse(&truncated, b).unwrap_err().contains("not closed"));
        let nameless = format!("--{b}\r\nContent-Disposition: form-data\r\n\r\nx\r\n--{b}--");
        assert!(parse(nameless.as_bytes(), b)
            .unwrap_err()
            .contains("no name"));
    }
}
